"""Where numbers come from: the commit a table names (the checkout's, or outside git the one SRDIV_COMMIT
names, never silently blank), and the BLAS kernels that decide the last bits of the document vectors."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from srdiv.cli.launch import AVX512, BLAS_KERNEL, pin_blas_kernel
from srdiv.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]


def test_outside_git_the_named_commit_is_labelled(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.delenv("SRDIV_COMMIT", raising=False)
    assert git_commit() == "unknown"
    monkeypatch.setenv("SRDIV_COMMIT", "abc1234")
    assert git_commit() == "abc1234 (SRDIV_COMMIT)"


def test_inside_git_the_checkout_wins(monkeypatch):
    monkeypatch.setenv("SRDIV_COMMIT", "abc1234")
    assert "SRDIV_COMMIT" not in git_commit() and git_commit() != "unknown"


def cpuinfo(tmp_path, flags):
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: fpu sse2 avx2 {' '.join(flags)}\n\n")
    return path


def test_a_cpu_with_avx512_runs_the_kernels_the_tables_were_built_with(tmp_path):
    env = {}
    pin_blas_kernel(env, cpuinfo(tmp_path, AVX512))
    assert env == {"OPENBLAS_CORETYPE": BLAS_KERNEL}


@pytest.mark.parametrize("missing", AVX512)
def test_a_cpu_without_one_of_them_keeps_openblas_choice(tmp_path, missing):
    env = {}
    pin_blas_kernel(env, cpuinfo(tmp_path, [f for f in AVX512 if f != missing]))
    assert env == {}


def test_the_users_choice_and_an_unreadable_cpuinfo_are_left_alone(tmp_path):
    env = {"OPENBLAS_CORETYPE": "Haswell"}
    pin_blas_kernel(env, cpuinfo(tmp_path, AVX512))
    assert env == {"OPENBLAS_CORETYPE": "Haswell"}
    env = {}
    pin_blas_kernel(env, tmp_path / "absent")
    assert env == {}


PROGRAM_START = """
import importlib.abc, os, sys
from pathlib import Path

class Numpy(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "numpy":
            print("numpy imported with", os.environ.get("OPENBLAS_CORETYPE"), flush=True)
            sys.meta_path.remove(self)
        return None

import srdiv.cli.launch
srdiv.cli.launch.pin_blas_kernel.__defaults__ = (os.environ, Path(sys.argv[1]))
sys.meta_path.insert(0, Numpy())
sys.argv = ["srdiv", "--help"]
srdiv.cli.launch.main()
"""


def test_the_program_chooses_the_kernel_before_numpy_loads_openblas(tmp_path):
    """OpenBLAS reads OPENBLAS_CORETYPE once, when numpy first loads it: the entry point sets it before."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    proc = subprocess.run([sys.executable, "-c", PROGRAM_START, str(cpuinfo(tmp_path, AVX512))], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith(f"numpy imported with {BLAS_KERNEL}\n"), proc.stdout[:500]

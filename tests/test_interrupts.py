"""An interrupt is never success: SIGINT exits 130 and SIGTERM 143 from every command, with one line."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import srdiv.collection.schema as schema
from srdiv.cli import main
from helpers import ROOT

SRDIV = Path(sys.executable).parent / "srdiv"


@pytest.fixture()
def evaluate_argv(tmp_path, monkeypatch):
    out = tmp_path / "metrics.parquet"
    monkeypatch.setattr(sys, "argv", ["srdiv", "evaluate", "--collection", str(tmp_path / "coll"), "--run", str(tmp_path / "r"),
                                      "--out", str(out)])
    previous = signal.getsignal(signal.SIGTERM)
    yield out
    signal.signal(signal.SIGTERM, previous)


def test_ctrl_c_in_a_command_exits_130(evaluate_argv, monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(schema, "load_collection", interrupted)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 130
    assert "interrupted by SIGINT" in capsys.readouterr().err
    assert not evaluate_argv.exists()


def test_sigterm_in_a_command_exits_143_through_the_cleanup(evaluate_argv, monkeypatch, capsys):
    cleaned = []

    def terminated(*args, **kwargs):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        finally:
            cleaned.append(True)          # finally blocks (and atomic writes' cleanup) still run

    monkeypatch.setattr(schema, "load_collection", terminated)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 143 and cleaned == [True]
    assert "interrupted by SIGTERM" in capsys.readouterr().err


@pytest.mark.parametrize("sig,codes", [(signal.SIGINT, (130, -signal.SIGINT)), (signal.SIGTERM, (143, -signal.SIGTERM))])
def test_a_real_command_stopped_by_a_signal_fails(sig, codes, tmp_path):
    """``srdiv embed`` on the default collection, signalled after 4 s: a failure status, no finished output."""
    # a shell that starts a command in the background ignores SIGINT for it, and children inherit that:
    # the command under test gets the default disposition, as a command run from a terminal has
    proc = subprocess.Popen([str(SRDIV), "embed", "--collection", "data/collections/wordnet-div", "--params",
                             "params.yaml", "--out", str(tmp_path / "embed")], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(4)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in codes, err[-2000:]
    assert not list(tmp_path.glob("embed/*.parquet"))


IMPORT_SIGNAL = """
import importlib.abc, os, signal, sys

SIG = getattr(signal, sys.argv[1])


class Signal(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "typer":                       # srdiv.cli's first heavy import
            os.kill(os.getpid(), SIG)
        return None

sys.meta_path.insert(0, Signal())
sys.argv = ["srdiv", "--help"]
from srdiv.launch import main
main()
"""


@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_commands_are_imported_is_an_interrupt(sig, code):
    """The entry point sets its handlers before it imports the commands: a signal during those imports
    ends the program with one line and 130 or 143, no traceback."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_SIGNAL, sig], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted by {sig}"), proc.stderr[-2000:]
    assert proc.stdout == ""


def test_the_installed_program_starts_at_the_launcher():
    """``srdiv`` on the PATH runs :func:`srdiv.launch.main` (pyproject's entry point), not the command line directly."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "srdiv"]
    assert script.value == "srdiv.launch:main"

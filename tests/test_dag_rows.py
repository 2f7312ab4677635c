"""The Snakefile builds its DAG without torch, on the first build too: its srdiv imports load no torch, and what
the rows give their models and objectives is checked before a run's first job (``srdiv check-rows``, the
Snakefile's onstart handler)."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from helpers import BIN, ROOT, cli

from srdiv.experiment import model_spec
from srdiv.params import load_params


def snakefile_imports() -> list[str]:
    """The srdiv import lines of the Snakefile and its rules, as written."""
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    return [line for path in files for line in path.read_text().splitlines()
            if re.match(r"(from|import) srdiv\b", line)]


def test_the_snakefiles_imports_load_no_torch():
    lines = snakefile_imports()
    assert any("srdiv.train" in line for line in lines)      # what it needs of the training rows is among them
    code = "\n".join(lines) + ("\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] "
                                "in ('torch', 'optuna') or m in ('srdiv.models', 'srdiv.objectives'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == []


def pipeline_copy(dest):
    """The Snakefile, its rules and settings in ``dest`` (no ``.snakemake``, no ``work/``), the committed data
    linked; ``(snakemake argv, env)`` that runs Snakemake there with this checkout's srdiv."""
    dest.mkdir()
    for name in ("Snakefile", "params.yaml", "config", "workflow"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, dest / name)
    (dest / "data").symlink_to(ROOT / "data")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    return [str(BIN / "snakemake"), "--cores", "1"], env


def test_the_first_dry_run_of_the_main_table_imports_no_torch(tmp_path):
    """``snakemake -n`` of the main table where Snakemake never ran: no torch, no models, no objectives (from
    ``-X importtime``'s lines), and no row check (a dry run starts no job)."""
    snakemake, env = pipeline_copy(tmp_path / "repo")
    done = subprocess.run([*snakemake, "-n", "--configfile", "params.yaml", "config/main.yaml"], cwd=tmp_path / "repo",
                          env={**env, "PYTHONPROFILEIMPORTTIME": "1"}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "snakemake" in imported and "srdiv.train.device" in imported       # the lines are there to read
    assert not {name for name in imported if name.split(".")[0] in ("torch", "optuna")
                or name.startswith(("srdiv.models", "srdiv.objectives"))}
    assert "rule train:" in done.stdout and "check-rows:" not in done.stdout + done.stderr


def test_a_run_checks_its_rows_before_its_first_job(tmp_path):
    """A misspelt row stops ``snakemake`` before any job, with srdiv's line naming the file and the key; with the
    rows right, the check passes and the first job runs after it."""
    repo = tmp_path / "repo"
    snakemake, env = pipeline_copy(repo)
    (repo / "bad.yaml").write_text("models:\n  DSSA: {model: {args: {hiden: 3}}}\n")
    smoke = ["--configfile", "params.yaml", "config/smoke.yaml"]
    failed = subprocess.run([*snakemake, *smoke, "bad.yaml"], cwd=repo, env=env, capture_output=True, text=True,
                            timeout=600)
    lines = (failed.stdout + failed.stderr).splitlines()
    assert failed.returncode != 0 and any(line.startswith("error: bad.yaml: models.DSSA.model.args: DSSA takes no "
                                                          "hiden") for line in lines), lines[-20:]
    assert not (repo / "work").exists() and not any(line.startswith("Finished jobid") for line in lines)
    done = subprocess.run([*snakemake, *smoke, "--until", "collection"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 0, lines[-20:]
    checked = next(i for i, line in enumerate(lines) if line.startswith("check-rows: 5 rows, "))
    assert checked < next(i for i, line in enumerate(lines) if re.match(r"(local)?rule collection:", line))


def test_check_rows_says_what_it_checked(monkeypatch, capsys):
    files = [ROOT / "params.yaml", ROOT / "config" / "smoke.yaml"]
    rows = ["ListMLE", "xQuAD", "DSSA"]
    code, err = cli(monkeypatch, capsys, "check-rows", *[a for row in rows for a in ("--row", row)],
                    *[a for f in files for a in ("--params", f)])
    params = load_params(files)
    points = sum(len(model_spec(params, row).corners()) for row in rows)
    assert code == 0 and err.strip().splitlines()[-1] == f"check-rows: 3 rows, {points} tuning points checked", err


@pytest.mark.parametrize("overlay, why", [
    ("models: {DSSA: {model: {args: {hiden: 50}}}}\n", "models.DSSA.model.args: DSSA takes no hiden"),
    ("models: {DSSA: {tune: {model.args.lam: [0.5, 1.5]}}}\n",
     "models.DSSA.model.args: lam must lie in [0, 1], got 1.5"),
    ("models: {DALETOR: {objective: {args: {temperature: 0}}}}\n", "models.DALETOR.objective.args:"),
])
def test_a_bad_row_is_one_line_naming_the_file_and_key(tmp_path, monkeypatch, capsys, overlay, why):
    (tmp_path / "bad.yaml").write_text(overlay)
    monkeypatch.chdir(tmp_path)
    code, err = cli(monkeypatch, capsys, "check-rows", "--row", "DALETOR", "--row", "DSSA",
                    "--params", ROOT / "params.yaml", "--params", "bad.yaml")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: bad.yaml: {why}"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]     # nothing written

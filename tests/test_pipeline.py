"""The pipeline description: dvc.yaml in sync with the Snakefile, the SLURM profile, the smoke DAG."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from srdiv.workflow import render_dvc_yaml
from conftest import BIN, ROOT

SMOKE = [Path("params.yaml"), Path("config/smoke.yaml")]
COMPARED_TABLES = ("main", "cutoffs")


@pytest.fixture()
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def test_dvc_yaml_matches_snakefile(in_root):
    """dvc.yaml is generated from the Snakemake DAG; editing one without the other fails here."""
    assert (ROOT / "dvc.yaml").read_text() == render_dvc_yaml(Path("Snakefile"), [Path("params.yaml")]), \
        "dvc.yaml drifted from the Snakefile: run `make dvc-yaml`"
    smoke = render_dvc_yaml(Path("Snakefile"), SMOKE, wdir="../..")
    assert (ROOT / "pipelines/smoke/dvc.yaml").read_text() == smoke, \
        "pipelines/smoke/dvc.yaml drifted from the Snakefile: run `make dvc-yaml`"


def test_a_failing_dvc_stage_shows_its_log():
    """Under DVC a stage's stderr goes to its log; on failure the end of the log reaches the terminal."""
    stages = yaml.safe_load((ROOT / "pipelines/smoke/dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        log = stage["cmd"].rsplit("|| { tail -n 20 ", 1)[-1].split(" ", 1)[0]
        assert log.startswith("logs/") and f"> {log}" in stage["cmd"], name


def test_every_dvc_stage_calls_srdiv():
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    commands = [stage["cmd"].split(" && ")[-1] for stage in stages.values()]
    assert commands and all(cmd.startswith("srdiv ") for cmd in commands)


def test_slurm_profile_dry_run(in_root, tmp_path):
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "--profile", "workflow/profiles/slurm", "-n", "--forceall", "--configfile",
                          *map(str, SMOKE)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rule train" in out.stdout + out.stderr


def test_a_study_trains_and_reports_apart_from_the_main_run(in_root):
    """``study``: models, logs and results under the study's name; text stages and samples shared."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "-n", "--forceall", "--cores", "1", "--configfile", *map(str, SMOKE),
                          "--config", "study=abl"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "work/wordnet-div-smoke/abl/models/ListMLE/fold1/model.pt" in log
    assert "results/wordnet-div-smoke-abl/README.md" in log
    assert "work/wordnet-div-smoke/samples/fold1/samples.npz" in log
    assert "work/wordnet-div-smoke/models/" not in log


def test_a_row_with_its_own_sample_settings_gets_its_own_samples(in_root, tmp_path):
    overlay = tmp_path / "rows.yaml"
    overlay.write_text("run_models: [DSSA, DSSA-N5]\n")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "-n", "-p", "--forceall", "--cores", "1", "--configfile",
                          *map(str, SMOKE), str(overlay)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "--out work/wordnet-div-smoke/samples/permutations5/fold1 " in log and "--row DSSA-N5" in log
    assert "work/wordnet-div-smoke/samples/fold1/samples.npz" in log            # DSSA's, shared


def _copy_project(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], capture_output=True, text=True,
                           cwd=ROOT, check=True).stdout.split()
    for name in files:
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.mark.slow
def test_smoke_through_snakemake_and_dvc_gives_same_tables(tmp_path):
    """The smoke DAG runs through Snakemake and through `dvc repro`, and the tables agree byte for byte."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    results = {}
    for runner in ("snakemake", "dvc"):
        work = tmp_path / runner
        _copy_project(work)
        if runner == "snakemake":
            cmd = [str(BIN / "snakemake"), "--cores", "2", "--resources", "gpu=1", "--configfile", *map(str, SMOKE)]
        else:   # as the README says: make dvc-smoke, which finds srdiv without an activated venv
            subprocess.run(["git", "init", "-q"], cwd=work, check=True)
            cmd = ["make", "dvc-smoke", f"VENV={BIN.parent}"]
        bare = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d and Path(d) != BIN)
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=work,
                             env=env if runner == "snakemake" else {**os.environ, "PATH": bare})
        assert out.returncode == 0, f"{runner} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        results[runner] = work / "results" / "wordnet-div-smoke"
        if runner == "snakemake":   # a changed value in params.yaml reruns the rows that read it, and only them
            overlay = work / "lr.yaml"
            overlay.write_text("models:\n  ListMLE: {model: listmle, objective: mle, group: implicit, "
                               "optim: {name: adam, lr: 0.02}}\n")
            again = subprocess.run(cmd + [str(overlay), "-n"], capture_output=True, text=True, env=env,
                                   cwd=work)
            assert again.returncode == 0, again.stderr[-3000:]
            planned = again.stdout + again.stderr
            assert "work/wordnet-div-smoke/models/ListMLE/fold1/model.pt" in planned
            assert "work/wordnet-div-smoke/models/DESA/fold1/model.pt" not in planned
    for stem in COMPARED_TABLES:
        for ext in ("md", "tex", "html"):
            a = (results["snakemake"] / "tables" / f"{stem}.{ext}").read_bytes()
            b = (results["dvc"] / "tables" / f"{stem}.{ext}").read_bytes()
            assert a == b, f"{stem}.{ext} differs between Snakemake and DVC"

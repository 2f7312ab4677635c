"""The pipeline description: dvc.yaml in sync with the Snakefile, the SLURM profile, the smoke DAG."""

import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from srdiv.cli import dvc_stages as stages
from srdiv.cli.main import app
from srdiv.cli.dvc_stages import command_modules, render_dvc_yamls
from helpers import BIN, ROOT, copy_project

SMOKE = [Path("params.yaml"), Path("config/smoke.yaml")]
STUDIES = [Path(f"config/{name}.yaml") for name in ("ablations-dssa", "ablations", "ablations-daletor", "sweeps", "ablations-desa", "all")]
DVC_SETTINGS = [   # as `make dvc-yaml` writes them: (settings, studies, dvc.yaml, wdir)
    ([Path("params.yaml"), Path("config/main.yaml")], STUDIES, Path("dvc.yaml"), None),
    (SMOKE, [], Path("pipelines/smoke/dvc.yaml"), "../.."),
    ([Path("params.yaml"), Path("config/main.yaml"), Path("config/debian-facets.yaml")], [],
     Path("pipelines/debian-facets/dvc.yaml"), "../.."),
    ([Path("params.yaml"), Path("config/trec-web.yaml")], [], Path("pipelines/trec-web/dvc.yaml"), "../.."),
    ([Path("params.yaml"), Path("config/oracle.yaml")], [], Path("pipelines/oracle/dvc.yaml"), "../.."),
]
COMPARED_TABLES = ("main", "cutoffs")


@pytest.fixture()
def in_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def dag_once():
    """The Snakemake DAGs of each group of settings read once for the module (the two tests below read the
    same ones): ``dvc_stages.job_stages`` remembers its answers and hands out copies."""
    made, read = {}, stages.job_stages

    def once(settings, snakefile, wdirs, modules):
        key = repr(([[Path(c).resolve() for c in configs] for configs in settings], Path(snakefile).resolve(),
                    list(wdirs), modules))
        if key not in made:
            made[key] = read(settings, snakefile, wdirs, modules)
        return copy.deepcopy(made[key])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stages, "job_stages", once)
        yield


@pytest.fixture(scope="module")
def dvc_stages(tmp_path_factory):
    """Every stage as DVC itself reads the repository's dvc.yaml files (matrix and foreach expanded), each
    at its place in a DVC repository that holds them and nothing else: not their locks (6 MB of output
    hashes, which DVC would parse for nothing these tests read) and no data or work directories to walk."""
    from dvc.repo import Repo

    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "--", ".dvcignore", "dvc.yaml",
                            "*/dvc.yaml"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split()
    assert "dvc.yaml" in files and "pipelines/smoke/dvc.yaml" in files, files
    root = tmp_path_factory.mktemp("dvc-files")
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    Repo.init(str(root), no_scm=True)
    with Repo(str(root)) as repo:
        return list(repo.index.stages)


def test_dvc_yaml_matches_snakefile(in_root, dag_once):
    """dvc.yaml files are generated from the Snakemake DAG; editing one without the other fails here."""
    for configs, studies, out, wdir in DVC_SETTINGS:
        for path, text in render_dvc_yamls(Path("Snakefile"), configs, out, command_modules(app), wdir, studies).items():
            assert (ROOT / path).read_text() == text, f"{path} drifted from the Snakefile: run `make dvc-yaml`"


def test_dvc_expands_to_the_snakemake_jobs(in_root, dag_once, dvc_stages):
    """DVC's expansion of the matrix/foreach stages gives each Snakemake job's command, inputs, code,
    params and outputs, and nothing else."""
    expected = {}
    for configs, studies, _, wdir in DVC_SETTINGS:
        settings = [configs] + [[configs[0], study] for study in studies]
        for jobs in stages.job_stages(settings, Path("Snakefile"), [wdir] + ["../.."] * len(studies),
                                      command_modules(app)):
            expected.update({_outs(job.stage)[0]: job.stage for job in jobs})
    for stage in dvc_stages:
        outs = sorted(out.def_path for out in stage.outs)
        job = expected.pop(outs[0], None)
        assert job is not None, f"{stage.addressing} makes {outs[0]}, which no Snakemake job makes"
        assert stage.cmd == job["cmd"], stage.addressing
        assert outs == _outs(job), stage.addressing
        deps = [dep for dep in stage.deps if type(dep).__name__ != "ParamsDependency"]
        assert [dep.def_path for dep in deps] == job["deps"], stage.addressing
        params = {os.path.relpath(dep.def_path, "."): dep.params for dep in stage.deps if dep not in deps}
        assert params == {f: keys for entry in job.get("params", []) for f, keys in entry.items()}, stage.addressing
    assert not expected, f"Snakemake jobs without a DVC stage: {sorted(expected)[:5]}"


def _outs(stage: dict) -> list[str]:
    return sorted(next(iter(out)) if isinstance(out, dict) else out for out in stage["outs"])


def test_a_failing_dvc_stage_shows_its_log(dvc_stages):
    """Under DVC a stage's stderr goes to its log; on failure the end of the log reaches the terminal."""
    for stage in dvc_stages:
        log = stage.cmd.rsplit("|| { tail -n 20 ", 1)[-1].split(" ", 1)[0]
        assert log.startswith("logs/") and f"> {log}" in stage.cmd, stage.addressing


def test_every_dvc_stage_calls_srdiv_and_depends_on_its_code(dvc_stages):
    for stage in dvc_stages:
        assert stage.cmd.split(" && ")[-1].startswith("srdiv "), stage.addressing
        command = stage.cmd.split(" && ")[-1].split()[1]
        package = {"features": "features", "samples": "sampling", "train": "train", "rank": "train",
                   "report": "report", "gather": "metrics", "evaluate": "metrics", "embed": "text",
                   "pseudo-docs": "text", "bundle": "features", "import-dssa": "features",
                   "collection": "collection"}[command]
        code = [dep.def_path for dep in stage.deps if dep.def_path.startswith("src/")]
        assert any(path.startswith(f"src/srdiv/{package}") for path in code), stage.addressing
        assert "src/srdiv" not in code and "src/srdiv/cli/main.py" not in code, stage.addressing
        empty = [path for path in code if (ROOT / path).is_file() and not (ROOT / path).stat().st_size]
        assert empty == [], stage.addressing      # DVC warns on every stage that depends on an empty file


def test_slurm_profile_dry_run(in_root, tmp_path):
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "--profile", "workflow/profiles/slurm", "-n", "--forceall", "--configfile",
                          *map(str, SMOKE)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "rule train" in out.stdout + out.stderr


def _dry_run_jobs(args):
    """``{(rule, wildcards): resources}`` of every job of ``snakemake -n --forceall`` with ``args``."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "-n", "--forceall", *args], capture_output=True, text=True,
                         env=env, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    jobs, rule, fields = {}, None, {}
    for line in [*(out.stdout + out.stderr).splitlines(), "rule end:"]:
        if line.startswith(("rule ", "localrule ")):   # a job's block starts; the one before ends
            if rule:
                jobs[(rule, fields.get("wildcards", ""))] = fields.get("resources", "")
            rule, fields = line.split()[1].rstrip(":"), {}
        elif ": " in line:
            key, value = line.strip().split(": ", 1)
            fields[key] = value
    return jobs, out.stdout + out.stderr


def test_the_bare_command_runs_the_main_table_and_only_cuda_rows_take_the_gpu(in_root):
    """``snakemake --cores 8 --resources gpu=1`` with no config file: the rows of config/main.yaml into
    results/wordnet-div; DESA, DALETOR and the NTN rows take a gpu slot, every other row none."""
    jobs, log = _dry_run_jobs(["--cores", "8", "--resources", "gpu=1"])
    main = yaml.safe_load(Path("config/main.yaml").read_text())["run_models"]
    trained = {wildcards.split(",")[0].removeprefix("model=") for rule, wildcards in jobs if rule == "train"}
    assert trained == set(main)
    assert "results/wordnet-div/README.md" in log and "results/wordnet-div-all" not in log
    on_gpu = {"DESA", "DALETOR", "R-LTR-NTN", "PAMM-NTN"}
    for (rule, wildcards), resources in jobs.items():
        assert rule != "rank", "the train job ranks the test fold itself"
        if rule == "train":
            model = wildcards.split(",")[0].removeprefix("model=")
            assert ("gpu=1" if model in on_gpu else "gpu=0") in resources.split(", "), (rule, wildcards, resources)


def test_pseudo_docs_takes_as_many_cores_as_its_inference_processes(in_root, tmp_path):
    """The pseudo_docs job's threads are ``pseudo_docs.workers`` (one home: params.yaml, else its default)."""
    overlay = tmp_path / "workers.yaml"
    overlay.write_text("pseudo_docs: {workers: 3}\n")
    for files, threads in ((SMOKE, "2"), ([*SMOKE, overlay], "3")):
        _, log = _dry_run_jobs(["--cores", "8", "--configfile", *map(str, files)])
        block = log.split("rule pseudo_docs:", 1)[1].split("\n\n", 1)[0]
        assert f"threads: {threads}" in block, block


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


@pytest.mark.slow
def test_smoke_through_snakemake_and_dvc_gives_same_tables(tmp_path):
    """The smoke DAG runs through Snakemake and through `dvc repro`, and the tables agree byte for byte."""
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    results = {}
    for runner in ("snakemake", "dvc"):
        work = tmp_path / runner
        copy_project(work)
        before = {p for p in work.rglob("*") if p.is_file()}
        if runner == "snakemake":
            cmd = [str(BIN / "snakemake"), "--cores", "2", "--resources", "gpu=1", "--configfile", *map(str, SMOKE)]
        else:   # as the README says: make dvc-smoke, which finds srdiv without an activated venv
            subprocess.run(["git", "init", "-q"], cwd=work, check=True)
            # -o: the venv under test as it is; make would otherwise reinstall srdiv into it, from this
            # temporary copy, whenever pyproject.toml is newer than the venv's stamp (or there is none)
            cmd = ["make", "-o", str(BIN.parent / ".srdiv-installed"), "dvc-smoke", f"VENV={BIN.parent}"]
        bare = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep) if d and Path(d) != BIN)
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=work,
                             env=env if runner == "snakemake" else {**os.environ, "PATH": bare})
        assert out.returncode == 0, f"{runner} failed:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
        results[runner] = work / "results" / "wordnet-div-smoke"
        if runner == "dvc":     # nothing left untracked (the lock is removed: the smoke results are not kept), no warning
            made = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file() and p not in before
                          and ".git" not in p.relative_to(work).parts)
            ignored = subprocess.run(["git", "check-ignore", "--stdin"], input="\n".join(made), text=True,
                                     capture_output=True, cwd=work).stdout.split()
            assert "Updating lock file 'pipelines/smoke/dvc.lock'" in out.stdout + out.stderr
            assert made and set(made) - set(ignored) == set(), sorted(set(made) - set(ignored))
            assert "WARNING" not in out.stdout + out.stderr, (out.stdout + out.stderr)[-3000:]
        if runner == "snakemake":   # a changed value in params.yaml reruns the rows that read it, and only them
            overlay = work / "lr.yaml"
            overlay.write_text("models:\n  ListMLE: {model: {name: listmle}, objective: {name: mle}, group: implicit, "
                               "optim: {name: adam, args: {lr: 0.02}}}\n")
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
    # docs/adding-a-model.md: the template model, one file and one overlay outside the package, joins the smoke
    # table through `make smoke CONFIG=...` (only its own jobs and the report run: the rest is done)
    work = tmp_path / "snakemake"
    out = subprocess.run(["make", "-o", str(BIN.parent / ".srdiv-installed"), "smoke", f"VENV={BIN.parent}",
                          "CONFIG=examples/linear-xquad.yaml"], capture_output=True, text=True, cwd=work)
    assert out.returncode == 0, f"{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    assert all((work / f"work/wordnet-div-smoke/models/LinearXQuAD/fold{k}/run.txt").exists() for k in (1, 2))
    row = next(line for line in (results["snakemake"] / "tables" / "main.md").read_text().splitlines()
               if line.startswith("| LinearXQuAD |"))
    assert len([cell for cell in row.split("|")[2:-1] if cell.strip().lstrip("*").startswith(".")]) == 5, row
    _gpu_train_jobs_round_trip(work, tmp_path / "gpu-machine", env)


def _gpu_train_jobs_round_trip(work: Path, machine: Path, env: dict) -> None:
    """workflow/scripts/gpu_train_jobs.sh (docs/running.md): a row's jobs packed in the smoke checkout, trained in
    a copy of the project with no work/ and no Snakemake on its PATH, and unpacked; Snakemake then trains none of
    them."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "smoke"]):
        subprocess.run(git + args, cwd=work, check=True, capture_output=True)
    (work / "gpu-row.yaml").write_text("run_models+: [DESA-1-1]\n")
    script = ["bash", "workflow/scripts/gpu_train_jobs.sh"]
    overlays = ["examples/linear-xquad.yaml", "gpu-row.yaml"]   # the last run's, then the row's
    setting = {**env, "CONFIG": " ".join(["config/smoke.yaml", *overlays])}
    packed = subprocess.run(script + ["pack", "DESA-1-1"], capture_output=True, text=True, cwd=work,
                            env={**setting, "PART_BYTES": str(2 ** 18)})
    assert packed.returncode == 0, packed.stdout + packed.stderr
    parts = sorted(p.name for p in (work / "work/gpu-carry").iterdir())
    assert len(parts) > 1 and "2 jobs" in packed.stdout, packed.stdout   # two folds; inputs cut into 256-KiB parts
    copy_project(machine)
    shutil.copy2(work / "gpu-row.yaml", machine)
    shutil.copytree(work / "work/gpu-carry", machine / "work/gpu-carry")
    bare = os.pathsep.join(d for d in env["PATH"].split(os.pathsep) if d and not (Path(d) / "snakemake").exists())
    python = machine / "bin"    # a python3 with torch and the other packages; srdiv comes from the copy's src
    python.mkdir()
    (python / "python3").write_text(f'#!/bin/sh\nexec "{BIN / "python"}" "$@"\n')
    (python / "python3").chmod(0o755)
    trained = subprocess.run(script + ["train", str(machine / "out")], capture_output=True, text=True, cwd=machine,
                             env={**os.environ, "PATH": f"{python}:{bare}", "PARALLEL": "2", "THREADS": "1"})
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert "2 of 2 jobs finished, 2 of them packed now" in trained.stdout, trained.stdout
    status = (machine / "out/status.tsv").read_text().splitlines()
    assert len(status) == 3 and all(line.split("\t")[1] == "0" for line in status[1:]), status
    unpacked = subprocess.run(script + ["unpack", str(machine / "out")], capture_output=True, text=True, cwd=work)
    assert unpacked.returncode == 0, unpacked.stderr
    again = subprocess.run(script + ["unpack", str(machine / "out")], capture_output=True, text=True, cwd=work)
    assert again.returncode == 2 and "is already here" in again.stderr
    planned = subprocess.run([str(BIN / "snakemake"), "-n", "--cores", "2", "--configfile", *map(str, SMOKE),
                              *overlays], capture_output=True, text=True, env=env, cwd=work)
    assert planned.returncode == 0, planned.stderr[-3000:]
    assert "rule train:" not in planned.stdout and "models/DESA-1-1/fold2/run.txt" in planned.stdout, planned.stdout

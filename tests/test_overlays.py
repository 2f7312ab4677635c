"""Overlays as users write them: lists extended with ``key+``, no self-listing, components imported from outside
the package (``import:`` and the entry point group), each mistake one line naming the file."""

import os
import re
import shutil
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint

import pytest

import srdiv.registry as registry
from helpers import BIN, ROOT
from srdiv.experiment import run_rows
from srdiv.io import InputError
from srdiv.params import load_params, merge, setting_files
from srdiv.registry import MODELS, import_components


def test_a_plus_key_extends_the_list_before_it():
    base = {"run_models": ["A", "B"], "folds": [1], "report": {"ablations": {"x": {"runs": ["A"]}}}}
    out = merge(base, {"run_models+": ["C", "A"], "folds+": [2], "report": {"ablations": {"x": {"runs+": ["Z"]}}}})
    assert out == {"run_models": ["A", "B", "C"], "folds": [1, 2], "report": {"ablations": {"x": {"runs": ["A", "Z"]}}}}
    assert merge({"run_models": "all"}, {"run_models+": ["C"]}) == {"run_models": "all"}
    assert merge({}, {"import+": ["a.py"]}) == {"import": ["a.py"]}
    assert merge(out, {"run_models": ["Q"]})["run_models"] == ["Q"]           # without the +: replaced


def test_overlays_extend_rows_and_need_not_list_themselves(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    mine = tmp_path / "mine.yaml"
    mine.write_text("models:\n  Mine: {extends: ListMLE}\nrun_models+: [Mine]\n")
    params = load_params(["params.yaml", "config/smoke.yaml", mine])
    assert run_rows(params) == ["Initial", "ListMLE", "xQuAD", "DSSA", "DESA", "Mine"]
    assert "params_files" not in params


@pytest.mark.parametrize("text, why", [
    ("run_models+: Mine\n", "'run_models+' must be a list, got 'Mine'"),
    ("seed+: [1]\n", "unknown key 'seed+'"),
    ("params_files: [params.yaml, mine.yaml]\n", "'params_files' is the old form: not needed any more"),
    ("import: [nowhere/my_model.py]\n", "import: cannot import 'nowhere/my_model.py': FileNotFoundError"),
    ("import: [no_such_module_xyz]\n", "import: cannot import 'no_such_module_xyz': ModuleNotFoundError"),
    ("import: [broken.py]\n", "import: cannot import 'broken.py': ZeroDivisionError"),
])
def test_a_bad_overlay_is_one_error_naming_it(tmp_path, monkeypatch, text, why):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.py").write_text("1 / 0\n")
    (tmp_path / "mine.yaml").write_text(text)
    with pytest.raises(InputError, match="mine.yaml") as err:
        load_params([tmp_path / "mine.yaml"])
    assert why in str(err.value)
    assert "broken" not in sys.modules


def test_an_imported_file_registers_once(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "overlay_model_a.py").write_text(textwrap.dedent("""
        from srdiv.models.listmle import ListMLE
        from srdiv.registry import MODELS
        MODELS.register("overlay-model-a")(type("OverlayModelA", (ListMLE,), {}))
    """))
    (tmp_path / "mine.yaml").write_text("import+: [overlay_model_a.py]\n")
    load_params([tmp_path / "mine.yaml"])                           # import+ imports too
    import_components(["overlay_model_a.py"], "other.yaml")        # the same file again: not registered twice
    assert MODELS.get("overlay-model-a").__name__ == "OverlayModelA"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "overlay_model_a.py").write_text("")
    with pytest.raises(InputError, match="a different module named 'overlay_model_a' is already imported"):
        import_components(["sub/overlay_model_a.py"], "mine.yaml")


def test_entry_points_register_components(tmp_path, monkeypatch):
    (tmp_path / "ep_plugin_b.py").write_text(textwrap.dedent("""
        from srdiv.models.listmle import ListMLE
        from srdiv.registry import MODELS
        MODELS.register("ep-model-b")(type("EpModelB", (ListMLE,), {}))
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    found = [EntryPoint("b", "ep_plugin_b", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: found if group == registry.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    assert MODELS.get("ep-model-b").__name__ == "EpModelB" and "ep-model-b" in MODELS.names()
    found[:] = [EntryPoint("c", "ep_plugin_missing", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    with pytest.raises(InputError, match="entry point srdiv.components:c: cannot import 'ep_plugin_missing'"):
        MODELS.names()


def test_setting_files_are_the_files_given_once_relative_to_the_root(monkeypatch):
    monkeypatch.chdir(ROOT)
    given = [ROOT / "params.yaml", ROOT / "config" / "smoke.yaml", "examples/linear-xquad.yaml"]
    assert setting_files(["params.yaml"], given) == ["params.yaml", "config/smoke.yaml", "examples/linear-xquad.yaml"]


def test_snakemake_passes_every_overlay_to_every_command(tmp_path):
    """An overlay of one's own after the setting's: its rows run, its keys reach each command's --params."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("models:\n  Mine: {extends: ListMLE}\nrun_models+: [Mine]\n")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    out = subprocess.run([str(BIN / "snakemake"), "-n", "-p", "--forceall", "--cores", "1", "--configfile",
                          "params.yaml", "config/smoke.yaml", str(mine)], capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    log = out.stdout + out.stderr
    assert "srdiv train --model Mine --fold 1" in log and "srdiv train --model DESA --fold 1" in log
    assert f"--params params.yaml --params config/smoke.yaml --params {mine}" in log


def test_a_row_depends_on_the_imported_file_that_registers_its_model_or_objective(tmp_path, monkeypatch):
    """The ``import:`` entry whose import registered a row's model or objective is that row's, and only its
    (srdiv's own components and rows have none)."""
    from srdiv.experiment import model_specs

    monkeypatch.chdir(tmp_path)
    (tmp_path / "overlay_parts_c.py").write_text(textwrap.dedent("""
        from srdiv.models.listmle import ListMLE
        from srdiv.objectives.mle import PlackettLuceMLE
        from srdiv.registry import MODELS, OBJECTIVES
        MODELS.register("overlay-model-c")(ListMLE)          # a class of srdiv's under a name of one's own
        OBJECTIVES.register("overlay-objective-c")(type("OverlayObjectiveC", (PlackettLuceMLE,), {}))
    """))
    (tmp_path / "mine.yaml").write_text(textwrap.dedent("""
        import: [overlay_parts_c.py]
        models:
          Own: {model: {name: overlay-model-c}, objective: {name: mle}}
          OwnLoss: {model: {name: listmle}, objective: {name: overlay-objective-c}}
          Plain: {model: {name: listmle}, objective: {name: mle}}
    """))
    specs = model_specs(load_params([tmp_path / "mine.yaml"]))
    assert [specs[row].imported_from() for row in ("Own", "OwnLoss", "Plain")] == [["overlay_parts_c.py"]] * 2 + [[]]
    assert registry.source_of(MODELS, "listmle") is None and registry.source_of(MODELS, "no-such") is None
    # in a process where the file is the first to import srdiv's models, they register during its import: still
    # srdiv's own, not the file's
    probe = ("from srdiv.registry import MODELS, import_components, source_of\n"
             "import_components(['overlay_parts_c.py'], 'mine.yaml')\n"
             "print(source_of(MODELS, 'dssa'), source_of(MODELS, 'overlay-model-c'))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split() == ["None", "overlay_parts_c.py"], out.stderr[-2000:]


def _snakemake(workdir, *args, env):
    out = subprocess.run([str(BIN / "snakemake"), "--cores", "1", "--configfile", "params.yaml", "config/smoke.yaml",
                          *map(str, args)], cwd=workdir, env=env, capture_output=True, text=True)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    return out.stdout + out.stderr


def _planned(workdir, *overlays, env) -> list[tuple[str, str]]:
    """``(rule, row)`` of every job ``snakemake -n`` plans (row "" for a job of no row), sorted."""
    log = _snakemake(workdir, *overlays, "-n", env=env)
    jobs = re.findall(r"^(?:local)?rule (\w+):\n((?: {4}.*\n?)*)", log, flags=re.M)
    return sorted((rule, (re.findall(r"wildcards: model=([^,\n]+)", body) or [""])[0]) for rule, body in jobs)


def _pretend_run(workdir, *overlays, env, everything=False):
    """Every output of the DAG made (empty files, folders) and recorded as Snakemake records a run of the
    jobs it plans (``--touch``): a run without its hours."""
    make = ("from pathlib import Path\nfrom srdiv.cli.dvc_stages import snakemake_jobs\n"
            f"for job in snakemake_jobs(Path('Snakefile'), {['params.yaml', 'config/smoke.yaml', *overlays]!r}):\n"
            "    for f in job.output:\n"
            "        Path(f).mkdir(parents=True, exist_ok=True) if f.is_directory else "
            "(Path(f).parent.mkdir(parents=True, exist_ok=True), Path(f).touch(exist_ok=True))\n")
    subprocess.run([sys.executable, "-c", make], cwd=workdir, env=env, check=True, capture_output=True)
    _snakemake(workdir, *overlays, "--touch", *(["--forceall"] if everything else []), env=env)


@pytest.mark.slow     # five Snakemake runs over the smoke DAG: a minute or two on 2 cores
def test_a_row_added_with_import_plans_only_its_own_jobs(tmp_path):
    """The smoke DAG run, then an overlay that adds a row whose model an ``import:`` file registers
    (examples/linear-xquad.yaml): ``snakemake -n`` plans that row's jobs (train, which ranks, and evaluate, per
    fold) and the gather and report, nothing else; editing the imported file then plans that row's jobs again,
    and only them."""
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("Snakefile", "params.yaml", "config", "workflow", "examples"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, work / name)
    (work / "data").symlink_to(ROOT / "data")
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    _pretend_run(work, env=env, everything=True)
    assert _planned(work, env=env) == []
    overlay = "examples/linear-xquad.yaml"
    row_jobs = [("all", ""), ("evaluate", "LinearXQuAD"), ("evaluate", "LinearXQuAD"), ("gather", ""),
                ("report", ""), ("train", "LinearXQuAD"), ("train", "LinearXQuAD")]
    assert _planned(work, overlay, env=env) == row_jobs
    _pretend_run(work, overlay, env=env)
    assert _planned(work, overlay, env=env) == []
    model = work / "examples" / "linear_xquad.py"
    model.write_text(model.read_text() + "# an edit\n")
    assert _planned(work, overlay, env=env) == row_jobs


@pytest.mark.parametrize("code, status, line", [
    ("import sys\nsys.exit(0)\n", 2, "error: {yaml}: import: cannot import 'stops.py': it called sys.exit(0) while "
                                     "being imported"),
    ("raise SystemExit('bye')\n", 2, "error: {yaml}: import: cannot import 'stops.py': it called sys.exit('bye')"),
    ("raise KeyboardInterrupt\n", 130, "interrupted by SIGINT while importing stops.py ({yaml}): stopped before "
                                       "finishing"),
])
def test_an_imported_module_that_stops_is_never_success(tmp_path, monkeypatch, capsys, code, status, line):
    """A module of ``import:`` that calls sys.exit (even with 0) or is interrupted while srdiv imports it ends
    the command with one line naming it, never with success; nothing is written."""
    from helpers import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "stops.py").write_text(code)
    (tmp_path / "mine.yaml").write_text("import: [stops.py]\n")
    status_, err = cli(monkeypatch, capsys, "train", "--model", "ListMLE", "--fold", 1, "--bundle", "none.npz",
                       "--collection", "none", "--params", ROOT / "params.yaml", "--params", "mine.yaml",
                       "--out", "out")
    lines = err.strip().splitlines()
    assert status_ == status and len(lines) == 1 and lines[0].startswith(line.format(yaml="mine.yaml")), err
    assert "stops" not in sys.modules and sorted(p.name for p in tmp_path.iterdir()) == ["mine.yaml", "stops.py"]


def test_an_entry_point_that_stops_is_one_error_naming_it(tmp_path, monkeypatch):
    (tmp_path / "ep_plugin_exit.py").write_text("import sys\nsys.exit(0)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = [EntryPoint("e", "ep_plugin_exit", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: found if group == registry.ENTRY_POINT_GROUP else [])
    monkeypatch.setattr(registry, "_entry_points_loaded", False)
    with pytest.raises(InputError, match=r"entry point srdiv.components:e: cannot import 'ep_plugin_exit': it called "
                                         r"sys.exit\(0\) while being imported"):
        MODELS.names()

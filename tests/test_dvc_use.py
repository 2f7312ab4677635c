"""DVC as a user meets it: a pipeline's status in a few lines (workflow/scripts/dvc_status.py, make
dvc-status), a directory remote (make dvc-remote) that a pipeline's outputs are pushed to and pulled from, and
the `embed` stage's output the same bytes when built in two fresh clones."""

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import BIN, ROOT, fresh_clone

spec = importlib.util.spec_from_file_location("dvc_status", ROOT / "workflow" / "scripts" / "dvc_status.py")
dvc_status = importlib.util.module_from_spec(spec)
spec.loader.exec_module(dvc_status)

SMOKE = "pipelines/smoke/dvc.yaml"
BUILT = ("work/wordnet-div-smoke/collection", "work/wordnet-div-smoke/embed")
"""The outputs of the smoke pipeline's first two stages (collection, embed), which the slow test builds."""


def test_status_groups_stages_by_why_they_are_stale():
    status = {
        "dvc.yaml:embed": [{"changed deps": {"src/srdiv/text": "modified"}}, {"changed outs": {"work/e": "deleted"}}],
        "dvc.yaml:features_diversity": [{"changed deps": {"work/e": "deleted"}},
                                        {"changed outs": {"work/f.parquet": "deleted"}}],
        "dvc.yaml:bundle@lda": [{"changed deps": {"work/e": "deleted"}}, {"changed outs": {"work/b/lda.npz": "not in cache"}}],
        "dvc.yaml:bundle@doc2vec": [{"changed deps": {"work/e": "deleted"}}, {"changed outs": {"work/b/d.npz": "deleted"}}],
        "dvc.yaml:train@DSSA-1": [{"changed deps": {"params.yaml": {"models.DSSA-1": "modified"}}}],
        "dvc.yaml:report": [{"changed deps": {"work/b": "modified"}}, "always changed"],
    }
    outs = {"work/e", "work/f.parquet", "work/b/lda.npz", "work/b/d.npz", "work/m/run.txt"}
    lines = dvc_status.summary("dvc.yaml", status, total=9, outs=outs)
    assert lines[0] == "dvc.yaml: 9 stages, 6 stale, 3 up to date"
    assert lines[1] == "  3 stale (inputs from stages above missing; outputs missing): features_diversity, bundle (2)"
    assert "  1 stale (code or data modified: src/srdiv/text; outputs missing): embed" in lines
    assert "  1 stale (params changed: params.yaml:models.DSSA-1): train" in lines
    assert "  1 stale (always changed; inputs from stages above modified): report" in lines   # work/b: a dir of outputs
    assert lines[-1].startswith("  outputs missing: `dvc pull`")
    assert dvc_status.summary("dvc.yaml", {}, total=3) == ["dvc.yaml: 3 stages, 0 stale, 3 up to date"]


def test_status_names_a_few_stage_groups_and_counts_the_rest():
    status = {f"{group}@R{i}": [{"changed outs": {f"o{i}": "modified"}}] for i in range(2) for group in "abcdef"}
    assert dvc_status.summary("p.yaml", status, 12)[1] == "  12 stale (outputs modified): a (2), b (2), c (2), d (2) (+2 more)"


def _run(cmd: list[str], cwd: Path, env: dict) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    assert out.returncode == 0, f"{' '.join(cmd)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout + out.stderr


def _contents(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for name in BUILT for p in sorted((root / name).rglob("*"))
            if p.is_file()}


@pytest.mark.slow
def test_push_pull_through_a_directory_remote_and_embed_reproduces(tmp_path):
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    dvc, make = str(BIN / "dvc"), ["make", "-o", str(BIN.parent / ".srdiv-installed"), f"VENV={BIN.parent}"]
    first = fresh_clone(tmp_path / "first")
    remote = tmp_path / "shared" / "srdiv-cache"
    _run(make + ["dvc-remote", f"DIR={remote}"], first, env)
    assert f"url = {remote}" in (first / ".dvc/config").read_text()
    _run([dvc, "repro", f"{SMOKE}:embed"], first, env)                 # collection, then embed
    built = _contents(first)
    assert "work/wordnet-div-smoke/embed/doc2vec.model" in built and "work/wordnet-div-smoke/collection/qrels.parquet" in built

    stages = [f"{SMOKE}:collection", f"{SMOKE}:embed"]     # the stages run (a whole pipeline once it has run)
    pushed = _run([dvc, "push", *stages], first, env)
    assert remote.is_dir() and any(remote.rglob("*")), pushed
    shutil.rmtree(first / ".dvc/cache")
    for name in BUILT:
        shutil.rmtree(first / name)
    _run([dvc, "pull", *stages], first, env)
    assert _contents(first) == built
    assert "Data and pipelines are up to date" in _run([dvc, "status", f"{SMOKE}:embed"], first, env)
    status = _run(make + ["dvc-status", f"PIPELINE={SMOKE}"], first, env)
    assert re.search(rf"^{SMOKE}: \d+ stages, \d+ stale, 2 up to date$", status, re.M), status

    # the embed stage built again in another fresh clone: the same bytes, so the same hash in the lock
    second = fresh_clone(tmp_path / "second")
    _run([dvc, "repro", f"{SMOKE}:embed"], second, env)
    again = _contents(second)
    assert sorted(again) == sorted(built)
    assert [name for name in built if again[name] != built[name]] == []

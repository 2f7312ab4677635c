"""The Snakefile builds its DAG without torch: its srdiv imports load no torch, and the rows it checks
(srdiv.train.rows.checked_rows) are checked once per setting and code, then read back without the models."""

import json
import re
import subprocess
import sys

import pytest

from helpers import ROOT
from srdiv.io import InputError
from srdiv.params import load_params
from srdiv.train.rows import MEMO_FILE, checked_rows


def snakefile_imports() -> list[str]:
    """The srdiv import lines of the Snakefile and its rules, as written."""
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    return [line for path in files for line in path.read_text().splitlines()
            if re.match(r"(from|import) srdiv\b", line)]


def run_python(code: str, *args: str) -> dict:
    """``code`` in a fresh interpreter in the repository root; what it prints as JSON."""
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_snakefiles_imports_load_no_torch():
    lines = snakefile_imports()
    assert any("srdiv.train" in line for line in lines)      # what it needs of the training rows is among them
    loaded = run_python("\n".join(lines) + "\nimport json, sys\n"
                        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'optuna') "
                        "or m in ('srdiv.models', 'srdiv.objectives'))))")
    assert loaded == []


CHECK = """
import json, sys
from srdiv.params import load_params
from srdiv.train.rows import checked_rows

params = load_params(["params.yaml"])
params["seed"] = int(sys.argv[2])
answer = checked_rows(params, ["xQuAD", "DESA"], ["params.yaml"], sys.argv[1])
print(json.dumps({"answer": answer, "torch": "torch" in sys.modules}))
"""


def test_rows_checked_once_are_read_back_without_torch(tmp_path):
    first = run_python(CHECK, str(tmp_path), "0")
    assert first == {"answer": {"xQuAD": False, "DESA": True, "ListMLE": False}, "torch": True}   # with its prior
    assert run_python(CHECK, str(tmp_path), "0") == {**first, "torch": False}
    assert run_python(CHECK, str(tmp_path), "1")["torch"]      # another setting is checked again
    assert len(json.loads((tmp_path / MEMO_FILE).read_text())) == 2


def test_a_failed_check_is_not_kept(tmp_path):
    params = load_params([ROOT / "params.yaml"])
    params["models"]["DSSA"]["model"]["args"]["hiden"] = 3
    for _ in range(2):
        with pytest.raises(InputError, match="takes no hiden"):
            checked_rows(params, ["DSSA"], [ROOT / "params.yaml"], tmp_path)
    assert not (tmp_path / MEMO_FILE).exists()

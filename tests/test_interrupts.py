"""An interrupt is never success: SIGINT exits 130 and SIGTERM 143 from every command, with one line."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import srdiv.collection.schema as schema
from helpers import ROOT
from srdiv.cli.main import main
from tiny_text_collection import write_tiny

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


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_real_command_stopped_by_a_signal_fails(sig, code, tmp_path):
    """``srdiv embed`` on a tiny collection with doc2vec set to train for hours, signalled once it is
    writing its output: srdiv's own status and line (a process killed by the bare signal fails the test),
    no finished output."""
    write_tiny(tmp_path / "coll")
    (tmp_path / "long.yaml").write_text(yaml.safe_dump({"embed": {"doc2vec": {"epochs": 10**7}}}))
    # a shell that starts a command in the background ignores SIGINT for it, and children inherit that:
    # the command under test gets the default disposition, as a command run from a terminal has
    proc = subprocess.Popen([str(SRDIV), "embed", "--collection", str(tmp_path / "coll"), "--params",
                             str(ROOT / "params.yaml"), "--params", str(tmp_path / "long.yaml"),
                             "--out", str(tmp_path / "embed")], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 60
        # ready: the temporary output directory exists, so main() has set its handlers and embed is training
        while not list(tmp_path.glob("*/embed")) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None and list(tmp_path.glob("*/embed")), "srdiv embed never started writing"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == code, err[-2000:]
    assert f"interrupted by {signal.Signals(sig).name}" in err, err[-2000:]
    assert not list(tmp_path.glob("embed/*.parquet")) and not list(tmp_path.glob("*/embed"))


IMPORT_SIGNAL = """
import importlib.abc, os, signal, sys

SIG, MODULE = getattr(signal, sys.argv[1]), sys.argv[2]
sys.modules.pop(MODULE, None)                     # imported again, as the program's first run does


class Signal(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == MODULE:
            os.kill(os.getpid(), SIG)
        return None

sys.meta_path.insert(0, Signal())
sys.argv = ["srdiv", "--help"]
from srdiv.cli.launch import main
main()
"""


@pytest.mark.parametrize("module", ["pathlib", "typer"])
@pytest.mark.parametrize("sig,code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_while_the_commands_are_imported_is_an_interrupt(sig, code, module):
    """The entry point sets its handlers first, before it imports anything but :mod:`srdiv.cli.interrupts`: a
    signal while it imports its own modules (``pathlib``) or the commands (``typer``, srdiv.cli's first heavy
    import) ends the program with one line and 130 or 143, no traceback."""
    proc = subprocess.run([sys.executable, "-c", IMPORT_SIGNAL, sig, module], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, proc.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith(f"interrupted by {sig}"), proc.stderr[-2000:]
    assert proc.stdout == ""


def test_the_installed_program_starts_at_the_launcher():
    """``srdiv`` on the PATH runs :func:`srdiv.cli.launch.main` (pyproject's entry point), not the command line directly."""
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "srdiv"]
    assert script.value == "srdiv.cli.launch:main"

"""Where a number came from: the code's commit and the machine, recorded by training and the report."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

CODE_PATHS = ("src", "workflow", "Snakefile", "params.yaml", "config")
"""What decides the numbers: edits there, not yet committed, mark the commit ``-modified``."""


def git_commit() -> str:
    """The checkout's short commit, ``-modified`` when :data:`CODE_PATHS` differ from it. Outside a git checkout
    (code copied to a cluster or GPU node without its ``.git``): the commit named by ``SRDIV_COMMIT``, marked
    ``(SRDIV_COMMIT)`` because nothing checked it, else ``unknown``."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS],
                                 capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        named = os.environ.get("SRDIV_COMMIT", "").strip()
        return f"{named} (SRDIV_COMMIT)" if named else "unknown"
    return head.stdout.strip() + ("-modified" if changed.stdout.strip() else "")


def cpu_name() -> str:
    """The CPU model from ``/proc/cpuinfo`` (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> str:
    """One line: system, CPU, cores, GPU, Python and torch versions."""
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
    return (f"{platform.system()} {platform.machine()}, {cpu_name()}, {os.cpu_count()} CPU cores, {gpu}, "
            f"Python {platform.python_version()}, torch {torch.__version__}")

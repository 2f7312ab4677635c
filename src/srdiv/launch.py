"""The ``srdiv`` program's entry point: Ctrl-C and SIGTERM are answered from its first instant.

The commands import heavy libraries (typer, pandas, torch) when :mod:`srdiv.cli` is imported; a
signal during those seconds must end the program as one during a command does (one line, exit 130
or 143), so this module imports nothing of srdiv's before it has set the handlers.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED = {130: "SIGINT", 143: "SIGTERM"}
"""Exit status of an interrupted command: 128 + the signal's number, as a shell reports a killed process."""


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that ``finally`` blocks and atomic writes clean up."""


def terminate(signum, frame) -> None:
    raise Terminated()


def stopped(code: int) -> None:
    """Say that the command was interrupted, and exit with ``code`` (130 or 143)."""
    sys.stderr.write(f"interrupted by {INTERRUPTED[code]}: stopped before finishing (files being written were "
                     "discarded; run it again)\n")
    sys.exit(code)


def main() -> None:
    """Set the signal handlers, then import and run the command line (:func:`srdiv.cli.main`)."""
    signal.signal(signal.SIGTERM, terminate)
    try:
        from srdiv.cli import main as run
    except KeyboardInterrupt:
        stopped(130)
    except Terminated:
        stopped(143)
    run()

"""How ``srdiv`` answers Ctrl-C and SIGTERM: 128 + the signal's number and one line, never success.

Used by :mod:`srdiv.cli.launch` before the commands are imported and by :mod:`srdiv.cli.main` while one runs;
it imports nothing but the standard library.
"""

from __future__ import annotations

import os
import sys

INTERRUPTED = {130: "SIGINT", 143: "SIGTERM"}
"""Exit status of an interrupted command: 128 + the signal's number, as a shell reports a killed process."""


class Terminated(BaseException):
    """SIGTERM, raised where the program is so that ``finally`` blocks and atomic writes clean up."""


def terminate(signum, frame) -> None:
    raise Terminated()


def stopped(code: int, importing: str | None = None) -> None:
    """Say that the command was interrupted (``importing``: the user's module it was importing), and exit
    with ``code`` (130 or 143)."""
    sys.stderr.write(_line(code, importing))
    sys.exit(code)


def stop_now(signum, frame) -> None:
    """The handler of a signal before a command has begun (nothing written yet): the line, then exit at
    once, raising nothing (an exception raised in a handler is lost when it falls in a callback)."""
    sys.stderr.write(_line(128 + signum))
    sys.stderr.flush()
    os._exit(128 + signum)


def _line(code: int, importing: str | None = None) -> str:
    during = f" while importing {importing}" if importing else ""
    return (f"interrupted by {INTERRUPTED[code]}{during}: stopped before finishing (files being written were "
            "discarded; run it again)\n")

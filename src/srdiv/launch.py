"""The ``srdiv`` program's entry point: Ctrl-C and SIGTERM are answered from its first instant.

The commands import heavy libraries (typer, pandas, torch) when :mod:`srdiv.cli` is imported; a
signal during those seconds must end the program as one during a command does (one line, exit 130
or 143), so this module imports nothing of srdiv's but :mod:`srdiv.interrupts` before it has set
the handlers.
"""

from __future__ import annotations

import signal

from srdiv.interrupts import Terminated, stopped, terminate


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

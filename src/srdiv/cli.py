"""The one command line: ``srdiv <stage> ...``.

Each stage lives in its package and exposes ``register(app)`` from a small
``commands.py`` that imports heavy libraries only inside the command bodies,
so ``srdiv --help`` stays fast. Snakemake rules and DVC stages call these
commands and nothing else.
"""

from __future__ import annotations

import importlib
import sys

import typer

from srdiv.io import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="srdiv: supervised search result diversification, one stage per command.")

COMMAND_MODULES = (
    "srdiv.collection.commands",
    "srdiv.metrics.commands",
    "srdiv.text.commands",
    "srdiv.features.commands",
    "srdiv.sampling.commands",
    "srdiv.train.commands",
    "srdiv.report.commands",
    "srdiv.workflow",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)


def main() -> None:
    """Entry point: bad input ends with one clear line and exit status 2."""
    try:
        app(standalone_mode=False)
    except InputError as err:
        typer.secho(f"error: {err}", err=True, fg=typer.colors.RED)
        sys.exit(2)
    except typer.Abort:
        sys.exit(1)
    except Exception as err:  # click usage errors carry their own exit code
        code = getattr(err, "exit_code", None)
        if code is None:
            raise
        if hasattr(err, "show"):
            err.show()
        sys.exit(code)

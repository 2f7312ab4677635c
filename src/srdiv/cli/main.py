"""The one command line: ``srdiv <stage> ...``.

Each stage's commands live in a module of their own beside this one (``srdiv.cli.train``, ...) and are
added with its ``register(app)``; they import heavy libraries only inside the command bodies, so
``srdiv --help`` stays fast. Snakemake rules and DVC stages call these commands and nothing else.
"""

from __future__ import annotations

import functools
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

import typer

from srdiv import registry
from srdiv.cli.interrupts import INTERRUPTED, Terminated, stopped, terminate
from srdiv.io import InputError, check_output, claim

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="srdiv: supervised search result diversification, one stage per command.")


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"srdiv {version('srdiv')}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print srdiv's version and exit.")) -> None:
    """srdiv: supervised search result diversification, one stage per command."""

COMMAND_MODULES = (
    "srdiv.cli.collection",
    "srdiv.cli.metrics",
    "srdiv.cli.text",
    "srdiv.cli.features",
    "srdiv.cli.sampling",
    "srdiv.cli.train",
    "srdiv.cli.report",
    "srdiv.cli.dvc",
)

for _name in COMMAND_MODULES:
    importlib.import_module(_name).register(app)

WHOLE_DIR_OUTPUTS = {"subset", "trec-web", "wordnet-div", "debian-facets", "embed", "pseudo-docs", "import", "export"}
"""Commands whose ``--out`` directory is replaced as a whole (:func:`srdiv.io.atomic_dir`)."""


def _generated(path: Path) -> bool:
    """Whether ``path`` is a dvc.yaml ``srdiv dvc-yaml`` wrote (:func:`srdiv.cli.dvc_stages.generated`, imported
    only when that command runs)."""
    from srdiv.cli.dvc_stages import generated

    return generated(path)


def _guard_outputs(name: str, command):
    """``command`` refusing an ``--out`` (or ``--*-out``) that would overwrite or replace one of its
    inputs (every other path option, :func:`srdiv.io.check_output`) or a file srdiv did not write
    (:func:`srdiv.io.claim`), a path that is not valid UTF-8, and one file given twice to an option
    (``--run A --run A``; ``--params`` may repeat a file), before it reads anything."""
    @functools.wraps(command)
    def guarded(**options):
        paths = {key: value if isinstance(value, list) else [value] for key, value in options.items()}
        paths = {key: [v for v in values if isinstance(v, Path)] for key, values in paths.items()}
        for key, values in paths.items():
            for i, value in enumerate(values):
                try:
                    os.fsencode(value).decode("utf-8")
                except UnicodeDecodeError:
                    raise InputError(value, "the path is not valid UTF-8 (srdiv writes paths into its records "
                                            "as text): rename it") from None
                if key != "params" and value.resolve() in {v.resolve() for v in values[:i]}:
                    raise InputError(value, f"given twice as --{key.replace('_', '-')}; give each once")
        inputs = [v for key, values in paths.items() if not (key == "out" or key.endswith("_out")) for v in values]
        for key, values in paths.items():
            if key == "out" or key.endswith("_out"):
                for out in values:
                    check_output(out, inputs, whole_dir=name in WHOLE_DIR_OUTPUTS)
                    if out.is_file() or not out.exists():     # not a directory, a device or a pipe
                        claim(out, legacy=_generated if name == "dvc-yaml" else None)
                    elif name in WHOLE_DIR_OUTPUTS:      # a committed output is checked for its kind when written
                        claim(os.path.realpath(out), legacy=lambda path: True)
        return command(**options)
    return guarded


for _info in [*app.registered_commands,
              *(c for g in app.registered_groups if g.typer_instance for c in g.typer_instance.registered_commands)]:
    assert _info.callback is not None   # every command is a decorated function
    _info.callback = _guard_outputs(_info.name or _info.callback.__name__.replace("_", "-"), _info.callback)


def _error(message: str, code: int = 2) -> NoReturn:
    """One line ``error: message`` (a path's bytes that are not UTF-8 shown as escapes), exit status ``code``."""
    line = f"error: {message}".encode("utf-8", "backslashreplace").decode("utf-8")
    typer.secho(" ".join(line.split()), err=True, fg=typer.colors.RED)
    sys.exit(code)


def main() -> None:
    """Entry point: bad input ends with one clear line and exit status 2; an interrupt is never success
    (SIGINT 130, SIGTERM 143, one line saying so); nor is a user's component that calls ``sys.exit`` or
    raises (one line naming its module, exit status 2)."""
    signal.signal(signal.SIGTERM, terminate)
    try:
        code = app(prog_name="srdiv", standalone_mode=False)    # typer turns Ctrl-C into the return value 130
    except InputError as err:
        _error(str(err))
    except OSError as err:  # an output that cannot be written (no such directory, disk full, permissions)
        where = f"{err.filename}: " if err.filename else ""
        _error(f"{where}{err.strerror or err}")
    except Terminated:
        code = 143
    except typer.Abort:
        sys.exit(1)
    except SystemExit as err:   # a user's model, objective or module called sys.exit: the command did not finish
        _error(f"{registry.culprit(err) or 'code outside srdiv'} called sys.exit({err.code!r}) while the command "
               "ran; the command did not finish")
    except Exception as err:  # click usage errors carry their own exit code
        code = getattr(err, "exit_code", None)
        if code is None:
            culprit = registry.culprit(err)
            if culprit is None:
                raise
            _error(f"{culprit} raised {type(err).__name__}: {err}")
        if hasattr(err, "format_message"):    # a usage error (click's): one line too, with where to look
            context = getattr(err, "ctx", None)
            _error(err.format_message() + (f" (see '{context.command_path} --help')" if context else ""), code)
        sys.exit(code)
    if isinstance(code, int) and code:
        if code in INTERRUPTED:
            stopped(code, registry.interrupted_import)
        sys.exit(code)

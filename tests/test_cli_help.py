"""Every command's ``--help`` reads as plain text: no Sphinx roles or reST literals leak from docstrings."""

import re

import typer
from typer.testing import CliRunner

from srdiv.cli.main import app

MARKUP = re.compile(r":(func|mod|class|data|meth|attr):`|``")


def command_paths(command, path=()):
    """``("features", "relevance")``-style paths of every command and group under ``command``."""
    yield list(path)
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from command_paths(sub, (*path, name))


def test_every_help_text_is_plain():
    runner = CliRunner()
    leaks = {}
    for path in command_paths(typer.main.get_command(app)):
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "300"})
        assert result.exit_code == 0, (path, result.output)
        leaks.update({" ".join(path): line.strip() for line in result.output.splitlines() if MARKUP.search(line)})
    assert leaks == {}


def test_embed_help_names_every_representation():
    output = CliRunner().invoke(app, ["embed", "--help"], env={"COLUMNS": "300"}).output
    assert all(name in output for name in ("doc2vec", "LDA", "SVD", "svd.parquet"))

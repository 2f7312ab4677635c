"""One room per concern: no module of the package over 400 lines and no function over 80 (a long text is a
template file, as the data cards' in ``srdiv/collection/templates``)."""

import ast
from pathlib import Path

import srdiv

SRC = Path(srdiv.__file__).resolve().parent
MODULE_LINES = 400
FUNCTION_LINES = 80


def oversized() -> dict[str, int]:
    """``{"pkg/module.py": lines}`` of each module over :data:`MODULE_LINES` and ``{"pkg/module.py:function":
    lines}`` of each function (method, nested function) over :data:`FUNCTION_LINES`."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MODULE_LINES:
            found[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES:
                    found[f"{name}:{node.name}"] = lines
    return found


def test_no_module_or_function_over_the_limits():
    assert oversized() == {}

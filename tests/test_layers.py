"""Every import points down the data flow (the layers of ``srdiv/__init__.py``)."""

import ast
from pathlib import Path

import srdiv

SRC = Path(srdiv.__file__).resolve().parent
LAYERS = [
    {"io", "params", "registry", "provenance"},
    {"experiment"},
    {"metrics"},
    {"index"},
    {"collection"},
    {"text"},
    {"features"},
    {"sampling"},
    {"models"},
    {"objectives"},
    {"train"},
    {"report"},
    {"pyterrier"},      # PyTerrier transformers over the models, trained rows and metrics (optional extra)
]
CLI = len(LAYERS)   # cli.py, launch.py, options.py, workflow.py and every commands.py may import any layer


def layer(module: str) -> int:
    """Layer of a dotted module under srdiv (``srdiv.metrics.runs`` -> metrics' layer)."""
    parts = module.split(".")
    if parts[-1] == "commands" or parts[1] in {"cli", "launch", "workflow", "options"}:
        return CLI
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every srdiv import in a file, function-local ones included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("srdiv."):
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("srdiv.")]
    return found


def test_every_package_has_a_layer():
    packages = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
                if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert packages - set().union(*LAYERS) == {"cli", "launch", "workflow", "options"}


def test_imports_point_down_the_data_flow():
    upward = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(("srdiv", *path.relative_to(SRC).with_suffix("").parts))
        if path.name == "__init__.py":
            module = module.rsplit(".", 1)[0]
        if module == "srdiv":
            continue
        for line, target in imports(path):
            if layer(target) > layer(module):
                upward.append(f"{path.relative_to(SRC.parent)}:{line} imports {target}")
    assert upward == []

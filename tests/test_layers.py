"""Every import points down the data flow (the layers of ``srdiv/__init__.py``), and no module imports itself
back through others."""

import ast
from functools import cache
from pathlib import Path

import srdiv

SRC = Path(srdiv.__file__).resolve().parent
LAYERS = [
    {"io", "params", "registry", "provenance"},
    {"metrics"},        # the measures, and their names (the headline measure a row is validated by)
    {"experiment"},
    {"index"},
    {"collection"},
    {"text"},
    {"features"},
    {"models"},
    {"objectives"},
    {"sampling"},       # samples for the objectives, which take them as arguments and never import sampling
    {"train"},
    {"report"},
    {"pyterrier"},      # PyTerrier transformers over the models, trained rows and metrics (optional extra)
    {"cli"},            # the program: entry point, signals, every stage's command, the dvc.yaml writer
]


def layer(module: str) -> int:
    """Layer of a dotted module under srdiv (``srdiv.metrics.runs`` -> metrics' layer)."""
    parts = module.split(".")
    return next(i for i, names in enumerate(LAYERS) if parts[1] in names)


@cache
def modules() -> dict[str, Path]:
    """``{dotted name: file}`` of every module under srdiv (a package by its ``__init__.py``)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = ("srdiv", *path.relative_to(SRC).with_suffix("").parts)
        found[".".join(parts[:-1] if path.name == "__init__.py" else parts)] = path
    return found


def imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every srdiv import in a file, function-local ones included; ``from srdiv.pkg
    import mod`` names the module ``srdiv.pkg.mod`` where ``mod`` is one."""
    known = modules()
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("srdiv."):
            subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in known]
            found += [(node.lineno, m) for m in subs] or [(node.lineno, node.module)]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("srdiv.")]
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules, and every module importing itself (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1 or node in graph.get(node, ()):
                out.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def import_graph() -> dict[str, set[str]]:
    """``{module: the srdiv modules it imports}`` (a package imported as a whole: its ``__init__``)."""
    return {module: {target for _, target in imports(path)} for module, path in modules().items()}


def test_every_package_has_a_layer():
    packages = {p.stem if p.is_file() else p.name for p in SRC.iterdir()
                if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert packages - set().union(*LAYERS) == set()


def test_imports_point_down_the_data_flow():
    upward = []
    for module, path in modules().items():
        if module == "srdiv":
            continue
        for line, target in imports(path):
            if layer(target) > layer(module):
                upward.append(f"{path.relative_to(SRC.parent)}:{line} imports {target}")
    assert upward == []


def test_no_import_circle():
    """No modules import each other in a circle, function-local imports included: within one package
    (``srdiv.collection.*``), or among modules of one layer (``srdiv.io``, ``srdiv.params``, ...)."""
    assert circles(import_graph()) == []


def test_circles_finds_a_function_local_circle(tmp_path):
    """The check itself: two modules of one package importing each other, one of them inside a function."""
    (tmp_path / "a.py").write_text("from srdiv.collection.b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from srdiv.collection.a import g\n")
    graph = {f"srdiv.collection.{p.stem}": {t for _, t in imports(p)} for p in tmp_path.glob("*.py")}
    assert circles(graph) == [["srdiv.collection.a", "srdiv.collection.b"]]
    assert circles({"x": {"y"}, "y": {"z"}, "z": set()}) == []

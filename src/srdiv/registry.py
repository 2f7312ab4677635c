"""Small name -> class registries (models, objectives), as in ir_measures / allRank.

srdiv's own components register when ``srdiv.models`` and ``srdiv.objectives`` are imported. Components
from outside the package register the same way (``@MODELS.register("name")``) in a module of their own,
which srdiv imports from either of two places:

* an ``import:`` list in a params file: module names (``my_package.my_model``) or Python files
  (``models/my_model.py``, relative to the directory srdiv runs in), imported when the file is loaded
  (:func:`import_components`, called by :func:`srdiv.params.load_params`);
* the entry point group :data:`ENTRY_POINT_GROUP` of an installed distribution (``[project.entry-points.
  "srdiv.components"] my_model = "my_package.my_model"``), imported the first time a registry is asked
  for a name.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from typing import Generic, TypeVar

from srdiv.io import InputError

T = TypeVar("T")

ENTRY_POINT_GROUP = "srdiv.components"
"""Entry point group whose entries name modules that register models or objectives when imported."""


class Registry(Generic[T]):
    """Maps names used in ``params.yaml`` to the classes that implement them."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}
        self._by: dict[str, str] = {}       # name -> the module that registered it

    def register(self, name: str) -> Callable[[T], T]:
        by = sys._getframe(1).f_globals.get("__name__", "")     # the module whose code calls register

        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' registered twice")
            self._items[name] = obj
            self._by[name] = by
            return obj

        return deco

    def get(self, name: str) -> T:
        load_entry_points()
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(f"unknown {self.kind} '{name}' (known: {known})") from None

    def names(self) -> list[str]:
        load_entry_points()
        return sorted(self._items)


MODELS: Registry = Registry("model")
"""Diversification models (``srdiv.models.<module>``), each a :class:`srdiv.models.base.DiversityModel`."""

OBJECTIVES: Registry = Registry("objective")
"""Training objectives / losses, each a :class:`srdiv.objectives.base.Objective`."""

_entry_points_loaded = False

_sources: dict[tuple[str, str], str] = {}
"""``(kind, name)`` -> the ``import:`` entry whose import registered that component (:func:`import_components`)."""


def _registered() -> set[tuple[str, str]]:
    """``(kind, name)`` of every component from outside srdiv registered so far (entry points not loaded for it;
    srdiv's own, which a user's module may be the first to import, left out)."""
    return {(registry.kind, name) for registry in (MODELS, OBJECTIVES) for name, by in registry._by.items()
            if by != "srdiv" and not by.startswith("srdiv.")}


def source_of(registry: Registry, name: str) -> str | None:
    """The ``import:`` entry (a ``.py`` file or a module name, as written) that registered ``name`` in
    ``registry``; None for srdiv's own components, those of entry points, and unknown names."""
    return _sources.get((registry.kind, name))


USER_MODULES: dict[str, str] = {}
"""The modules of components from outside the package (``import:``, entry points): module name -> how the
user named it. The command line names the one whose code stopped a command (:func:`culprit`)."""

interrupted_import: str | None = None
"""The user's module being imported when an interrupt (Ctrl-C, SIGTERM) arrived, for the interrupt's line."""


def load_entry_points() -> None:
    """Import, once, every module of the :data:`ENTRY_POINT_GROUP` entry points (their components register)."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for point in entry_points(group=ENTRY_POINT_GROUP):
        USER_MODULES[point.module] = f"entry point {ENTRY_POINT_GROUP}:{point.name}"
        _import_user(point.load, f"entry point {ENTRY_POINT_GROUP}:{point.name}", point.value, "cannot import")


def import_components(names: list[str], where: str | os.PathLike) -> None:
    """Import the modules named by a params file's ``import:`` list (``where``), each once per process.

    A name ending in ``.py`` is a file (relative to the working directory), imported as a module named after
    its stem; any other name is a module on the Python path. A name that cannot be imported, or a module
    that fails on import or calls ``sys.exit``, is one :class:`InputError` naming ``where`` and the module. The
    components a module registers are recorded as its (:func:`source_of`): only the rows that use them depend on
    its file.
    """
    for name in names:
        before = _registered()
        USER_MODULES[Path(name).stem if name.endswith(".py") else name] = f"'{name}' (import: in {where})"
        _import_user(partial(_import_file, Path(name)) if name.endswith(".py") else
                     partial(importlib.import_module, name), where, name, "import: cannot import")
        _sources.update(dict.fromkeys(_registered() - before, name))


def _import_user(load: Callable[[], object], where: str | os.PathLike, name: str, what: str) -> None:
    """``load()`` a user's module: its failure, or a ``sys.exit`` in it, is one :class:`InputError`; an
    interrupt goes on, with the module noted in :data:`interrupted_import`."""
    global interrupted_import
    try:
        load()
    except InputError:
        raise
    except SystemExit as err:
        raise InputError(where, f"{what} '{name}': it called sys.exit({err.code!r}) while being imported") from None
    except Exception as err:
        raise InputError(where, f"{what} '{name}': {type(err).__name__}: {err}") from None
    except BaseException:
        interrupted_import = f"{name} ({where})"
        raise


def culprit(err: BaseException) -> str | None:
    """The user's module (:data:`USER_MODULES`) whose code raised ``err``, as ``module 'NAME' (FILE:LINE)``: the
    innermost frame of the traceback that lies in one (or as a process that ran it found it: ``err.culprit``);
    None when none does."""
    found = getattr(err, "culprit", None)   # set by the process that ran it (srdiv.train.pool)
    if found:
        return found
    frames, tb = [], err.__traceback__
    while tb is not None:
        frames.append(tb)
        tb = tb.tb_next
    for tb in reversed(frames):
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module in USER_MODULES:
            return f"module {USER_MODULES[module]} ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
    return None


def _import_file(path: Path) -> None:
    """Import the Python file ``path`` as the module ``path.stem`` (unless that module is this file already)."""
    if not path.is_file():
        raise FileNotFoundError(f"no such file {path} (relative to {Path.cwd()})")
    loaded = sys.modules.get(path.stem)
    if loaded is not None:
        if Path(getattr(loaded, "__file__", "") or "").resolve() == path.resolve():
            return
        raise ImportError(f"a different module named '{path.stem}' is already imported ({loaded.__file__})")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None   # a .py file has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[path.stem]
        raise


def _interval(text: str) -> tuple[float, float, bool, bool]:
    """``"[0, 1)"`` -> (low, high, low included, high included); ``inf`` for no bound."""
    low, high = (float(part) for part in text[1:-1].split(","))
    return low, high, text[0] == "[", text[-1] == "]"


def _annotation_kind(annotation) -> str:
    """``int``, ``float``, ``bool``, ``str`` or ``ints`` (a sequence of int) of a constructor annotation."""
    text = str(annotation).replace("typing.", "").replace(" ", "")
    for kind, spellings in (("ints", ("Sequence[int]", "tuple[int,...]", "list[int]")), ("int", ("int",)),
                            ("float", ("float",)), ("bool", ("bool",)), ("str", ("str",))):
        if text in spellings:
            return kind
    return "any"


def check_args(cls: type, args: dict) -> None:
    """Each of ``args`` has the type its keyword is annotated with in ``cls``'s constructors and lies in
    the interval the class declares for it (``ARG_RANGES = {"dropout": "[0, 1)"}``, following the class
    chain); a ValueError names the first that does not."""
    import inspect
    import math

    kinds, ranges = {}, {}
    for klass in reversed(cls.__mro__):
        ranges.update(vars(klass).get("ARG_RANGES", {}))
        if "__init__" in vars(klass):
            for p in inspect.signature(vars(klass)["__init__"], eval_str=False).parameters.values():
                kinds[p.name] = _annotation_kind(p.annotation)
    for name, value in args.items():
        kind = kinds.get(name, "any")
        numbers = list(value) if kind == "ints" and isinstance(value, (list, tuple)) else [value]
        ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
              "ints": lambda v: (isinstance(value, (list, tuple))  # noqa: B023 (called in this iteration)
                                 and isinstance(v, int) and not isinstance(v, bool)),
              "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
              "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
              "any": lambda v: True}[kind]
        what = {"int": "an integer", "ints": "a list of integers", "float": "a finite number", "bool": "true or false",
                "str": "a string", "any": "a value"}[kind]
        if not all(ok(v) for v in numbers):
            raise ValueError(f"{name} must be {what}, got {value!r}")
        if name in ranges and value is not None:
            low, high, low_in, high_in = _interval(ranges[name])
            for v in numbers:
                if not isinstance(v, (int, float)) or not ((v >= low if low_in else v > low)
                                                            and (v <= high if high_in else v < high)):
                    raise ValueError(f"{name} must lie in {ranges[name]}, got {value!r}")

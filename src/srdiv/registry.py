"""Small name -> class registries (models, objectives), as in ir_measures / allRank."""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names used in ``params.yaml`` to the classes that implement them."""

    def __init__(self, kind: str):
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str) -> Callable[[T], T]:
        def deco(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} '{name}' registered twice")
            self._items[name] = obj
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            raise KeyError(f"unknown {self.kind} '{name}' (known: {known})") from None

    def names(self) -> list[str]:
        return sorted(self._items)


MODELS: Registry = Registry("model")
"""Diversification models (``srdiv.models.<module>``), each a :class:`srdiv.models.base.DiversityModel`."""

OBJECTIVES: Registry = Registry("objective")
"""Training objectives / losses, each a :class:`srdiv.objectives.base.Objective`."""

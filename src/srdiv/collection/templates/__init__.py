"""The text of the data cards, one Markdown template each: ``str.format`` fields hold what the card's
``data_card`` measures and computes (``{cfg.NAME}``: a build parameter)."""

from importlib.resources import files


def fill(name: str, **values) -> str:
    """The template ``<name>.md`` of this package with its fields filled from ``values``."""
    return files(__name__).joinpath(f"{name}.md").read_text(encoding="utf-8").format(**values)

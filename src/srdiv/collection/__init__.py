"""Collections: one on-disk schema for every dataset (see :mod:`srdiv.collection.schema`)."""

from srdiv.collection.schema import TABLES, Collection, load_collection, write_collection

__all__ = ["TABLES", "Collection", "load_collection", "write_collection"]

"""Lookups for ``StreamingDataFrame.join_lookup`` (Quix Streams 3.28 module path)."""

from .base import BaseField, BaseLookup
from .sqlite import SQLiteLookup, SQLiteLookupField, SQLiteLookupQueryField

__all__ = ("BaseField", "BaseLookup", "SQLiteLookup", "SQLiteLookupField", "SQLiteLookupQueryField")

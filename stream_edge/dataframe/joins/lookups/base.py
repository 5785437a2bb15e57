"""Lookup join contracts (Quix Streams 3.28): a lookup enriches a record's value in place.

Subclass :class:`BaseLookup` (``join(fields, on, value, key, timestamp, headers)``) and
:class:`BaseField` (one enrichment column) to plug in another source.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, Mapping, TypeVar

__all__ = ("BaseField", "BaseLookup")

F = TypeVar("F", bound="BaseField")


class BaseField(abc.ABC):
    """One column a lookup adds to the record's value."""


class BaseLookup(abc.ABC, Generic[F]):
    """Enriches ``value`` in place with one entry per field, looked up by ``on`` (the target key)."""

    @abc.abstractmethod
    def join(self, fields: Mapping[str, F], on: Any, value: dict, key: Any, timestamp: int, headers: Any) -> None:
        """Set ``value[name]`` for every ``name, field`` of ``fields``."""

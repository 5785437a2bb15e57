"""Filter operators: a false-like result drops the record from the branch."""

from __future__ import annotations

from typing import List

from .base import Ref, StreamFunction

__all__ = ("FilterFunction", "FilterWithMetadataFunction")


class FilterFunction(StreamFunction):
    """Wrap ``func(value) -> bool``. At a leaf the callback still runs (it may have side effects)."""

    arguments = "value"

    def code(self, ref: Ref) -> List[str]:
        return [f"if not {ref(self.func, self.label)}({self.arguments}):", "    return"]


class FilterWithMetadataFunction(FilterFunction):
    """Wrap ``func(value, key, timestamp, headers) -> bool``."""

    arguments = "value, key, timestamp, headers"

"""State: the key-value state a stateful function receives, scoped to one message key.

Example::

    def count(value, state: State):
        total = state.get("total", 0) + 1
        state.set("total", total)
        return total

    sdf = sdf.apply(count, stateful=True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Optional

__all__ = ("State",)


class State(ABC):
    """Primary interface for working with key-value state data from StreamingDataFrame."""

    @abstractmethod
    def get(self, key: Any, default: Any = None) -> Optional[Any]:
        """The value for ``key`` if present, else ``default``."""

    @abstractmethod
    def set(self, key: Any, value: Any) -> None:
        """Set the value for ``key``."""

    @abstractmethod
    def delete(self, key: Any) -> None:
        """Delete ``key``; a missing key is not an error."""

    @abstractmethod
    def exists(self, key: Any) -> bool:
        """True if ``key`` has a value."""

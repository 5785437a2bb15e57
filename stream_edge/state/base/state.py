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
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.state.transaction import PartitionTransaction

__all__ = ("State", "TransactionState")


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


class TransactionState(State):
    """A :class:`State` over one partition transaction and one message-key prefix."""

    __slots__ = ("_prefix", "_transaction")

    def __init__(self, prefix: bytes, transaction: "PartitionTransaction") -> None:
        self._prefix = prefix
        self._transaction = transaction

    def get(self, key: Any, default: Any = None) -> Optional[Any]:
        return self._transaction.get(key, default, prefix=self._prefix)

    def set(self, key: Any, value: Any) -> None:
        self._transaction.set(key, value, prefix=self._prefix)

    def delete(self, key: Any) -> None:
        self._transaction.delete(key, prefix=self._prefix)

    def exists(self, key: Any) -> bool:
        return self._transaction.exists(key, prefix=self._prefix)

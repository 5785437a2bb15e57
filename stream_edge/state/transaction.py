"""Per-checkpoint transactions over one store partition.

A transaction lives as long as its partition is assigned and spans one checkpoint at a time:
changes stay in memory until :meth:`BaseTransaction.prepare` turns them into changelog records
and :meth:`BaseTransaction.commit` writes them to the backend in one atomic write with the
processed offsets. :meth:`BaseTransaction.rollback` forgets every uncommitted change, so a failed
checkpoint leaves nothing behind.

Example::

    >>> from stream_edge.state.backends import MemoryBackend
    >>> tx = PartitionTransaction(MemoryBackend())
    >>> tx.set("total", 3, prefix=b"sensor-1")
    >>> tx.get("total", prefix=b"sensor-1"), tx.get("total", prefix=b"sensor-2", default=0)
    (3, 0)
    >>> changes = tx.prepare(); tx.commit(processed_offsets={"input": 10}, changelog_offset=None)
    >>> tx.rollback(); tx.get("total", prefix=b"sensor-1")
    3
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .backends import StoreBackend
from .base.state import State
from .serialization import SEPARATOR, default_dumps, default_loads

__all__ = ("BaseTransaction", "PartitionTransaction", "TransactionState", "DEFAULT_PREFIX")

DEFAULT_PREFIX = b""
_DELETED: Any = object()
_UNSET: Any = object()

#: one checkpoint's serialised changes: ``[(key, value or None for a delete), ...]``
Changes = List[Tuple[bytes, Optional[bytes]]]


class BaseTransaction(ABC):
    """Shared checkpoint protocol: prepare -> commit, or rollback."""

    def __init__(self, backend: StoreBackend, dumps: Callable[[Any], bytes] = default_dumps,
                 loads: Callable[[bytes], Any] = default_loads) -> None:
        self.backend = backend
        self._dumps = dumps
        self._loads = loads
        self._prepared: Optional[Dict[bytes, Optional[bytes]]] = None

    @property
    @abstractmethod
    def dirty(self) -> bool:
        """True when this checkpoint changed something."""

    @abstractmethod
    def _serialize_changes(self) -> Dict[bytes, Optional[bytes]]:
        """This checkpoint's changes as serialised key -> value (None deletes)."""

    @abstractmethod
    def _forget(self) -> None:
        """Drop this checkpoint's in-memory changes."""

    def prepare(self) -> Changes:
        """Serialise this checkpoint's changes (the changelog records to produce)."""
        self._prepared = self._serialize_changes()
        return list(self._prepared.items())

    def commit(self, processed_offsets: Optional[Mapping[str, int]], changelog_offset: Optional[int]) -> None:
        """Write the prepared changes and the processed offsets (per source topic) in one atomic
        write, then start afresh."""
        prepared = self._prepared if self._prepared is not None else self._serialize_changes()
        self._prepared = None
        if prepared or processed_offsets:
            self.backend.write(prepared, processed_offsets, changelog_offset)
        self._after_commit()

    def rollback(self) -> None:
        """Forget every change since the last commit."""
        self._prepared = None
        self._forget()

    def _after_commit(self) -> None:
        self._forget()


class PartitionTransaction(BaseTransaction):
    """Key-value operations of one store partition (``get``/``set``/``delete``/``exists``)."""

    def __init__(self, backend: StoreBackend, dumps: Callable[[Any], bytes] = default_dumps,
                 loads: Callable[[bytes], Any] = default_loads) -> None:
        super().__init__(backend, dumps, loads)
        self._updates: Dict[bytes, Any] = {}

    @property
    def dirty(self) -> bool:
        return bool(self._updates)

    def _key(self, key: Any, prefix: bytes) -> bytes:
        return prefix + SEPARATOR + self._dumps(key)

    def get(self, key: Any, default: Any = None, prefix: bytes = DEFAULT_PREFIX) -> Any:
        """The value of ``key`` under ``prefix`` (this checkpoint's writes included), or ``default``."""
        raw_key = self._key(key, prefix)
        value = self._updates.get(raw_key, _UNSET)
        if value is _UNSET:
            data = self.backend.get(raw_key)
            # deserialise on every read: a value mutated without set() must not leak into state
            return default if data is None else self._loads(data)
        return default if value is _DELETED else value

    def set(self, key: Any, value: Any, prefix: bytes = DEFAULT_PREFIX) -> None:
        self._updates[self._key(key, prefix)] = value

    def delete(self, key: Any, prefix: bytes = DEFAULT_PREFIX) -> None:
        self._updates[self._key(key, prefix)] = _DELETED

    def exists(self, key: Any, prefix: bytes = DEFAULT_PREFIX) -> bool:
        raw_key = self._key(key, prefix)
        value = self._updates.get(raw_key, _UNSET)
        if value is _UNSET:
            return self.backend.get(raw_key) is not None
        return value is not _DELETED

    def as_state(self, prefix: bytes = DEFAULT_PREFIX) -> State:
        """A :class:`State` whose keys all live under ``prefix`` (the message key)."""
        return TransactionState(prefix, self)

    def _serialize_changes(self) -> Dict[bytes, Optional[bytes]]:
        dumps = self._dumps
        return {key: (None if value is _DELETED else dumps(value)) for key, value in self._updates.items()}

    def _forget(self) -> None:
        self._updates = {}


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

"""Windowed store transactions: each message key's window state lives in memory as one object.

Windows of a key are read from the backend once, then updated in place by the window engine for
every message; at a checkpoint each key touched since the previous one is serialised once (one
RocksDB value and one changelog record per key per checkpoint, however many messages it had).

Example::

    >>> from stream_edge.state.backends import MemoryBackend
    >>> from stream_edge.dataframe.windows.aggregations import Sum
    >>> from stream_edge.dataframe.windows.fixed_engine import FixedWindowEngine
    >>> engine = FixedWindowEngine(10, 0, None, Sum())
    >>> tx = WindowedPartitionTransaction(MemoryBackend())
    >>> engine.process_current(tx.key_state(b"k", engine), 5, 3)
    [(0, 10, 5)]
    >>> [key for key, value in tx.prepare()]
    [b'k']
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Protocol, Set

from .backends import StoreBackend
from .serialization import default_dumps, default_loads, message_key_bytes
from .transaction import BaseTransaction

__all__ = ("WindowedPartitionTransaction", "KeyStateCodec")

#: keys kept deserialised between checkpoints before the cache is dropped (they reload lazily)
LIVE_KEYS_LIMIT = 500_000


class KeyStateCodec(Protocol):
    """What a window engine provides to persist its per-key state."""

    def new_key_state(self) -> Any: ...
    def dump_key_state(self, ks: Any) -> Any: ...
    def load_key_state(self, data: Any) -> Any: ...


class WindowedPartitionTransaction(BaseTransaction):
    """Per-key window states of one windowed store partition."""

    def __init__(self, backend: StoreBackend, dumps: Callable[[Any], bytes] = default_dumps,
                 loads: Callable[[bytes], Any] = default_loads) -> None:
        super().__init__(backend, dumps, loads)
        self._live: Dict[Any, Any] = {}
        self._dirty: Set[Any] = set()
        self._codec: Optional[KeyStateCodec] = None
        self._partition_state: Any = None

    @property
    def dirty(self) -> bool:
        return bool(self._dirty)

    def key_state(self, key: Any, codec: KeyStateCodec) -> Any:
        """The live window state of ``key`` (loaded or created), marked as changed."""
        ks = self._live.get(key)
        if ks is None:
            data = self.backend.get(message_key_bytes(key))
            ks = codec.new_key_state() if data is None else codec.load_key_state(self._loads(data))
            self._live[key] = ks
            self._codec = codec
        self._dirty.add(key)
        return ks

    def peek_key_state(self, key: Any, codec: KeyStateCodec) -> Optional[Any]:
        """The stored window state of ``key`` without marking it changed (``None`` if absent)."""
        ks = self._live.get(key)
        if ks is not None:
            return ks
        data = self.backend.get(message_key_bytes(key))
        return None if data is None else codec.load_key_state(self._loads(data))

    def partition_state(self, codec: Any) -> Any:
        """Partition-wide window state (``closing_strategy="partition"``), built once from every key.

        Keys are the state's bytes keys: all of them are loaded (and kept) in memory.
        """
        if self._partition_state is None:
            loads, live = self._loads, self._live
            for raw_key, data in self.backend.items():
                if raw_key not in live:
                    live[raw_key] = codec.load_key_state(loads(data))
            self._codec = codec
            self._partition_state = codec.new_partition_state(list(live.items()))
        return self._partition_state

    def _serialize_changes(self) -> Dict[bytes, Optional[bytes]]:
        if not self._dirty:
            return {}
        codec = self._codec
        assert codec is not None  # set when the first key was loaded or created
        dump, dumps, live = codec.dump_key_state, self._dumps, self._live
        return {message_key_bytes(key): dumps(dump(live[key])) for key in self._dirty}

    def _after_commit(self) -> None:
        self._dirty = set()
        if len(self._live) > LIVE_KEYS_LIMIT and self._partition_state is None:
            self._live = {}

    def _forget(self) -> None:
        self._live = {}
        self._dirty = set()
        self._partition_state = None

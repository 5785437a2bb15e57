"""One record accumulated by a batching sink."""

from __future__ import annotations

from typing import Any, List, Tuple

__all__ = ("SinkItem", "HeadersTuples")

HeadersTuples = List[Tuple[str, Any]]


class SinkItem:
    """A processed record waiting in a :class:`~stream_edge.sinks.base.batch.SinkBatch`."""

    __slots__ = ("value", "key", "timestamp", "headers", "offset")

    def __init__(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples, offset: int) -> None:
        self.value = value
        self.key = key
        self.timestamp = timestamp
        self.headers = headers
        self.offset = offset

    def __repr__(self) -> str:
        return (f"SinkItem(offset={self.offset}, key={self.key!r}, timestamp={self.timestamp}, "
                f"value={self.value!r})")

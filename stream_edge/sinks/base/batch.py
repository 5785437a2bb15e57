"""The in-memory batch a :class:`BatchingSink` accumulates per topic partition between checkpoints."""

from __future__ import annotations

from collections import deque
from itertools import islice
from typing import Any, Deque, Iterable, Iterator, Optional

from .item import HeadersTuples, SinkItem

__all__ = ("SinkBatch",)


class SinkBatch:
    """Records of one topic partition, in offset order, accumulated between two checkpoints.

    :param topic: a topic name.
    :param partition: a partition number.

    Example::

        batch = SinkBatch("events", 0)
        batch.append(value={"x": 1}, key=b"k", timestamp=0, headers=[], offset=10)
        for chunk in batch.iter_chunks(500):
            send(list(chunk))
    """

    __slots__ = ("topic", "partition", "items")

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        #: the records in offset order; ``items.append(SinkItem(...))`` adds one without a method
        #: call (what ``BatchingSink.add`` does per record)
        self.items: Deque[SinkItem] = deque()

    def append(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples, offset: int) -> None:
        self.items.append(SinkItem(value, key, timestamp, headers, offset))

    @property
    def size(self) -> int:
        return len(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def start_offset(self) -> Optional[int]:
        """Offset of the first record (None when empty)."""
        return self.items[0].offset if self.items else None

    @property
    def end_offset(self) -> Optional[int]:
        """Offset of the last record (None when empty)."""
        return self.items[-1].offset if self.items else None

    def __iter__(self) -> Iterator[SinkItem]:
        return iter(self.items)

    def iter_chunks(self, n: int) -> Iterable[Iterable[SinkItem]]:
        """Iterate over the batch in chunks of length ``n``; the last chunk may be shorter."""
        if n < 1:
            raise ValueError("n must be at least one")
        it = iter(self.items)
        while True:
            chunk = tuple(islice(it, n))
            if not chunk:
                return
            yield chunk

    def empty(self) -> bool:
        """True if the batch holds no record."""
        return not self.items

    def clear(self) -> None:
        self.items.clear()

    def __repr__(self) -> str:
        return f"SinkBatch(topic={self.topic!r}, partition={self.partition}, size={len(self.items)})"

"""Changelog records: one compacted topic per store, one partition per source partition.

Each record is a store key and its new serialised value (``None``: deleted) with the header
``__processed_offset__``: the last source offset of the checkpoint that produced it. Recovery
applies a record only if that offset is below the group's committed offset, so the changes of
a checkpoint whose offset commit failed never come back.

Example::

    writer = ChangelogWriter(producer, "changelog__group--input--default")
    writer.produce(partition=0, changes=[(b"k|\\"n\\"", b"3")], processed_offset=41)
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

__all__ = ("ChangelogWriter", "PROCESSED_OFFSET_HEADER", "processed_offset_of")

PROCESSED_OFFSET_HEADER = "__processed_offset__"


class ChangelogWriter:
    """Produces one store's changelog records through the application's producer."""

    def __init__(self, producer: Any, topic: str) -> None:
        self._producer = producer
        self.topic = topic

    def produce(self, partition: int, changes: List[Tuple[bytes, Optional[bytes]]],
                processed_offset: Optional[int]) -> None:
        headers = None if processed_offset is None else [
            (PROCESSED_OFFSET_HEADER, str(processed_offset).encode())]
        produce, topic = self._producer.produce, self.topic
        for key, value in changes:
            produce(topic, value=value, key=key, headers=headers, partition=partition)


def processed_offset_of(headers: Any) -> Optional[int]:
    """The ``__processed_offset__`` header of a changelog record, if any."""
    if not headers:
        return None
    for name, value in headers:
        if name == PROCESSED_OFFSET_HEADER and value is not None:
            return int(value)
    return None

"""Changelog records: one compacted topic per store, one partition per source partition.

Each record is a store key and its new serialised value (``None``: deleted) with the source
offsets of the checkpoint that produced it. A store of a stream with one input topic carries the
header ``__processed_offset__`` (that topic's last offset); a store of a stream fed by several
topics (``concat``) carries ``__processed_offsets__``, a JSON object ``{topic: offset}``. Recovery
applies a record only if every offset is below the group's committed offset of its topic, so the
changes of a checkpoint whose offset commit failed never come back.

Example::

    writer = ChangelogWriter(producer, "changelog__group--input--default", topics=("input",))
    writer.produce(partition=0, changes=[(b"k|\\"n\\"", b"3")], processed_offsets={"input": 41})
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import orjson

__all__ = ("ChangelogWriter", "PROCESSED_OFFSET_HEADER", "PROCESSED_OFFSETS_HEADER", "processed_offsets_of")

PROCESSED_OFFSET_HEADER = "__processed_offset__"
PROCESSED_OFFSETS_HEADER = "__processed_offsets__"


class ChangelogWriter:
    """Produces one store's changelog records through the application's producer."""

    def __init__(self, producer: Any, topic: str, topics: Sequence[str]) -> None:
        self._producer = producer
        self.topic = topic
        self._single = topics[0] if len(topics) == 1 else None  # the one header format per store

    def produce(self, partition: int, changes: List[Tuple[bytes, Optional[bytes]]],
                processed_offsets: Optional[Mapping[str, int]]) -> None:
        headers = None
        if processed_offsets:
            if self._single is not None:
                headers = [(PROCESSED_OFFSET_HEADER, str(processed_offsets[self._single]).encode())]
            else:
                headers = [(PROCESSED_OFFSETS_HEADER, orjson.dumps(dict(processed_offsets)))]
        produce, topic = self._producer.produce, self.topic
        for key, value in changes:
            produce(topic, value=value, key=key, headers=headers, partition=partition)


def processed_offsets_of(headers: Any, topics: Sequence[str]) -> Optional[Dict[str, int]]:
    """The source offsets a changelog record was produced at (``None``: no header), per topic.

    ``topics`` are the store's stream's input topics: the single-offset header names the first.
    """
    if not headers:
        return None
    for name, value in headers:
        if value is None:
            continue
        if name == PROCESSED_OFFSET_HEADER:
            return {topics[0]: int(value)}
        if name == PROCESSED_OFFSETS_HEADER:
            return {str(topic): int(offset) for topic, offset in orjson.loads(value).items()}
    return None

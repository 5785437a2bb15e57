"""``CSVSink``: every assigned partition into one CSV file (for local debugging)."""

from __future__ import annotations

import csv
import json
import os
from typing import Any, Callable

from stream_edge.sinks.base import BatchingSink, SinkBatch

__all__ = ("CSVSink",)

_COLUMNS = ("key", "value", "timestamp", "topic", "partition", "offset")


class CSVSink(BatchingSink):
    """Appends rows ``key, value, timestamp, topic, partition, offset`` to one CSV file.

    :param path: the CSV file (a header is written when it is created).
    :param dialect: a :mod:`csv` dialect, default ``"excel"``.
    :param key_serializer: key -> str, default ``str``.
    :param value_serializer: value -> str, default ``json.dumps``.

    Example::

        sdf.sink(CSVSink("out.csv", key_serializer=lambda k: k.decode()))
    """

    def __init__(self, path: str, dialect: str = "excel", key_serializer: Callable[[Any], str] = str,
                 value_serializer: Callable[[Any], str] = json.dumps) -> None:
        super().__init__()
        self.path = path
        self.dialect = dialect
        self._key_serializer = key_serializer
        self._value_serializer = value_serializer

    def write(self, batch: SinkBatch) -> None:
        new_file = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        key_ser, value_ser = self._key_serializer, self._value_serializer
        with open(self.path, "a", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, dialect=self.dialect)
            if new_file:
                writer.writerow(_COLUMNS)
            writer.writerows(
                (key_ser(item.key), value_ser(item.value), item.timestamp, batch.topic, batch.partition,
                 item.offset)
                for item in batch
            )

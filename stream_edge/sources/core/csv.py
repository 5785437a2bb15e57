"""CSVSource: produce the rows of a CSV file as JSON messages."""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Callable, Optional, Union

from stream_edge.sources.base.source import Source

__all__ = ("CSVSource",)


class CSVSource(Source):
    """Read a CSV file and produce each row (a dict of strings) as JSON.

    Example::

        source = CSVSource("data.csv", name="readings", key_extractor=lambda row: row["id"])
        sdf = app.dataframe(source=source)
    """

    def __init__(self, path: Union[str, Path], name: str,
                 key_extractor: Optional[Callable[[dict], Union[str, bytes]]] = None,
                 timestamp_extractor: Optional[Callable[[dict], int]] = None, delay: float = 0,
                 shutdown_timeout: float = 10, dialect: str = "excel") -> None:
        super().__init__(name=name, shutdown_timeout=shutdown_timeout)
        self.path = Path(path)
        self.key_extractor = key_extractor
        self.timestamp_extractor = timestamp_extractor
        self.delay = delay
        self.dialect = dialect

    def run(self) -> None:
        with open(self.path, newline="") as handle:
            for row in csv.DictReader(handle, dialect=self.dialect):
                if not self.running:
                    break
                key = self.key_extractor(row) if self.key_extractor else None
                if isinstance(key, str):
                    key = key.encode()
                timestamp = self.timestamp_extractor(row) if self.timestamp_extractor else int(time.time() * 1000)
                msg = self.serialize(value=row, timestamp_ms=timestamp)
                self.produce(value=msg.value, key=key, timestamp=timestamp)
                if self.delay:
                    time.sleep(self.delay)

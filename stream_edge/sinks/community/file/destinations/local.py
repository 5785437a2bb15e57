"""Local filesystem destination of the file sink."""

from __future__ import annotations

import os
from pathlib import Path

from stream_edge.lake.durable import write_atomic

from stream_edge.sinks.base import SinkBatch

from ..formats import Format
from .base import Destination

__all__ = ("LocalDestination",)


class LocalDestination(Destination):
    """Writes each batch to a new local file (atomically: temp file + rename), or appends.

    :param append: append to the newest existing file of the partition instead of creating a new
        one (only for formats that support it, e.g. JSON).

    Example::

        FileSink(directory="out", format="json", destination=LocalDestination(append=True))
    """

    def __init__(self, append: bool = False) -> None:
        super().__init__()
        self._append = append

    def set_extension(self, format: Format) -> None:  # noqa: A002 - v3 API name
        if self._append and not format.supports_append:
            raise ValueError(f"{type(format).__name__} does not support appending")
        super().set_extension(format)

    def write(self, data: bytes, batch: SinkBatch) -> None:
        folder = Path(self._batch_dir(batch))
        folder.mkdir(parents=True, exist_ok=True)
        if self._append:
            existing = sorted(p for p in folder.glob(f"*{self._extension}") if p.is_file())
            if existing:
                with open(existing[-1], "ab") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                return
        write_atomic(self._batch_path(batch), data)

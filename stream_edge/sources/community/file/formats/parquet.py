"""Parquet: each row becomes ``{"_key", "_timestamp", "_value": {every other column}}``."""

from __future__ import annotations

from typing import Any, BinaryIO, Generator, Optional

from ..compressions import CompressionName
from .base import Format

__all__ = ("ParquetFormat",)

_META = ("_key", "_timestamp")


class ParquetFormat(Format):
    """Reads Parquet files batch by batch (pyarrow)."""

    def __init__(self, compression: Optional[CompressionName] = None) -> None:
        super().__init__(compression)

    def deserialize(self, filestream: BinaryIO) -> Generator[dict, None, None]:
        import pyarrow.parquet as pq

        for batch in pq.ParquetFile(filestream).iter_batches():
            for row in batch.to_pylist():
                record: dict[str, Any] = {name: row.pop(name) for name in _META if name in row}
                record["_value"] = row
                yield record

"""Parquet format of the file sink."""

from __future__ import annotations

from typing import Literal

from stream_edge.sinks.base import SinkBatch

from .base import Format

__all__ = ("ParquetFormat", "Compression")

Compression = Literal["none", "snappy", "gzip", "brotli", "lz4", "zstd"]
_COMPRESSIONS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")


class ParquetFormat(Format):
    """One Parquet file per batch: columns ``_timestamp``, ``_key`` and the keys of the values.

    Values must be dicts; missing fields are filled with nulls, so every row has every column.

    Example::

        FileSink(directory="out", format=ParquetFormat(compression="zstd"))
    """

    def __init__(self, file_extension: str = ".parquet", compression: Compression = "snappy") -> None:
        if compression not in _COMPRESSIONS:
            raise ValueError(f"compression must be one of {_COMPRESSIONS}, got {compression!r}")
        self._file_extension = file_extension
        self._compression = compression

    @property
    def file_extension(self) -> str:
        return self._file_extension

    @property
    def supports_append(self) -> bool:
        return False

    def serialize(self, batch: SinkBatch) -> bytes:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = []
        for item in batch:
            value = item.value
            if not isinstance(value, dict):
                raise TypeError(
                    f"ParquetFormat needs dict values; got {type(value).__name__} at "
                    f"{batch.topic}[{batch.partition}] offset {item.offset}"
                )
            key = item.key
            if isinstance(key, (bytes, bytearray)):
                key = key.decode("utf-8", errors="replace")
            row = {"_timestamp": item.timestamp, "_key": key}
            row.update(value)
            rows.append(row)
        # pa.array infers the union of all keys (from_pylist would use the first row only).
        table = pa.Table.from_struct_array(pa.array(rows))
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression=self._compression)
        return sink.getvalue().to_pybytes()

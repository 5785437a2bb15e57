"""RocksDBOptions: the RocksDB settings of every store partition (``Application(rocksdb_options=...)``).

Example::

    from stream_edge.state.rocksdb import RocksDBOptions
    app = Application(..., rocksdb_options=RocksDBOptions(block_cache_size=64 * 1024 ** 2))
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

from stream_edge.state.serialization import default_dumps, default_loads

__all__ = ("RocksDBOptions", "RocksDBOptionsType")

_COMPRESSIONS = ("none", "snappy", "zlib", "bz2", "lz4", "lz4hc", "zstd")


@dataclasses.dataclass(frozen=True)
class RocksDBOptions:
    """RocksDB database options.

    ``dumps``/``loads`` (de)serialise keys and values (JSON by default); ``open_max_retries`` and
    ``open_retry_backoff`` retry opening a database still locked by another process (0 disables).
    The other fields map to ``rocksdict.Options`` (see its documentation).
    """

    write_buffer_size: int = 64 * 1024 * 1024
    target_file_size_base: int = 64 * 1024 * 1024
    max_write_buffer_number: int = 3
    block_cache_size: int = 128 * 1024 * 1024
    bloom_filter_bits_per_key: int = 10
    enable_pipelined_write: bool = False
    compression_type: str = "lz4"
    wal_dir: Optional[str] = None
    max_total_wal_size: int = 128 * 1024 * 1024
    db_log_dir: Optional[str] = None
    dumps: Callable[[Any], bytes] = default_dumps
    loads: Callable[[bytes], Any] = default_loads
    open_max_retries: int = 10
    open_retry_backoff: float = 3.0

    def __post_init__(self) -> None:
        if self.compression_type not in _COMPRESSIONS:
            raise ValueError(f"compression_type must be one of {_COMPRESSIONS}, got {self.compression_type!r}")

    def to_options(self) -> Any:
        """Build the ``rocksdict.Options`` (raw byte keys and values) for one database."""
        import rocksdict

        opts = rocksdict.Options(raw_mode=True)
        opts.create_if_missing(True)
        opts.create_missing_column_families(True)
        opts.set_write_buffer_size(self.write_buffer_size)
        opts.set_target_file_size_base(self.target_file_size_base)
        opts.set_max_write_buffer_number(self.max_write_buffer_number)
        opts.set_enable_pipelined_write(self.enable_pipelined_write)
        opts.set_max_total_wal_size(self.max_total_wal_size)
        opts.set_compression_type(getattr(rocksdict.DBCompressionType, self.compression_type)())
        if self.wal_dir:
            opts.set_wal_dir(self.wal_dir)
        if self.db_log_dir:
            opts.set_db_log_dir(self.db_log_dir)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(self.block_cache_size))
        table.set_bloom_filter(self.bloom_filter_bits_per_key, False)
        opts.set_block_based_table_factory(table)
        return opts


RocksDBOptionsType = RocksDBOptions

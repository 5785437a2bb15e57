"""RocksDB-backed state: ``RocksDBOptions`` and the store backend."""

from .options import RocksDBOptions, RocksDBOptionsType

__all__ = ("RocksDBOptions", "RocksDBOptionsType")

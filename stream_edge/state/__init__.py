"""Keyed state: stores (RocksDB, memory), per-checkpoint transactions, changelogs and recovery.

Example::

    def running_total(value, state: State):
        state.set("total", state.get("total", 0) + value["amount"])

    sdf = sdf.update(running_total, stateful=True)
"""

from .backends import MemoryBackend, RocksDBBackend, StoreBackend
from .base.state import State
from .exceptions import *  # noqa: F401,F403
from .manager import DEFAULT_STATE_STORE_NAME, StateStoreManager
from .rocksdb.options import RocksDBOptions
from .transaction import PartitionTransaction, TransactionState
from .windowed import WindowedPartitionTransaction

__all__ = ("State", "TransactionState", "StateStoreManager", "PartitionTransaction",
           "WindowedPartitionTransaction", "RocksDBOptions", "StoreBackend", "MemoryBackend", "RocksDBBackend",
           "DEFAULT_STATE_STORE_NAME")

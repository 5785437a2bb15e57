"""Committed bytes of one store partition: an in-memory dict or a RocksDB database.

A backend only ever sees whole checkpoints: :meth:`write` applies one checkpoint's puts and
deletes together with the processed source offset and the changelog offset in a single atomic
write (one RocksDB ``WriteBatch``), so after a crash the store holds exactly the last successful
checkpoint and nothing a failed one touched.

Example::

    >>> backend = MemoryBackend()
    >>> backend.write({b"k": b"1", b"gone": None}, processed_offsets={"input": 41}, changelog_offset=None)
    >>> backend.get(b"k"), backend.processed_offsets
    (b'1', {'input': 41})

The processed offsets are per source topic: a store of a stream fed by two topics (``concat``)
holds the last processed offset of each in its partition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import gc
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Mapping, Optional, Tuple

from .exceptions import StoreLockedError
from .rocksdb.options import RocksDBOptions

__all__ = ("StoreBackend", "MemoryBackend", "RocksDBBackend")

logger = logging.getLogger("stream_edge.state")

_META_CF = "__metadata__"
_PROCESSED = b"processed_offset:"  # + the source topic's name
_LEGACY_PROCESSED = b"processed_offset"  # stores written before offsets were kept per topic
_CHANGELOG = b"changelog_offset"


def _encode_offset(offset: int) -> bytes:
    return offset.to_bytes(8, "big", signed=True)


def _decode_offset(data: Optional[bytes]) -> Optional[int]:
    return None if data is None else int.from_bytes(data, "big", signed=True)


class StoreBackend(ABC):
    """Interface of a partition's committed storage."""

    persistent = False
    #: the last processed offset of each source topic, as of the last committed checkpoint
    processed_offsets: Dict[str, int]
    #: the offset a store written before offsets were kept per topic holds (its only topic's)
    legacy_processed_offset: Optional[int] = None
    changelog_offset: Optional[int] = None

    @abstractmethod
    def get(self, key: bytes) -> Optional[bytes]:
        """The committed value of ``key`` (None if absent)."""

    @abstractmethod
    def write(self, changes: Dict[bytes, Optional[bytes]], processed_offsets: Optional[Mapping[str, int]],
              changelog_offset: Optional[int]) -> None:
        """Apply one checkpoint's changes atomically, with the offsets they correspond to."""

    @abstractmethod
    def items(self) -> Iterator[Tuple[bytes, bytes]]:
        """Every committed key and value."""

    @abstractmethod
    def clear(self) -> None:
        """Delete everything."""

    def close(self) -> None:
        return None


class MemoryBackend(StoreBackend):
    """Committed state in a dict; it is rebuilt from the changelog on every assignment."""

    def __init__(self) -> None:
        self._data: Dict[bytes, bytes] = {}
        self.processed_offsets = {}
        self.changelog_offset = None

    def get(self, key: bytes) -> Optional[bytes]:
        return self._data.get(key)

    def write(self, changes: Dict[bytes, Optional[bytes]], processed_offsets: Optional[Mapping[str, int]],
              changelog_offset: Optional[int]) -> None:
        data = self._data
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        if processed_offsets:
            self.processed_offsets.update(processed_offsets)
        if changelog_offset is not None:
            self.changelog_offset = changelog_offset

    def items(self) -> Iterator[Tuple[bytes, bytes]]:
        return iter(list(self._data.items()))

    def clear(self) -> None:
        self._data.clear()
        self.processed_offsets = {}
        self.changelog_offset = None


class RocksDBBackend(StoreBackend):
    """One RocksDB database (one directory) per store partition."""

    persistent = True

    def __init__(self, path: Path, options: Optional[RocksDBOptions] = None) -> None:
        self.path = Path(path)
        self._options = options or RocksDBOptions()
        self._db: Any = None
        self._meta: Any = None
        self._meta_handle: Any = None
        self._open()

    def _open(self) -> None:
        from rocksdict import Options, Rdict

        self.path.parent.mkdir(parents=True, exist_ok=True)
        opts = self._options.to_options()
        attempts = max(self._options.open_max_retries, 0) + 1
        for attempt in range(1, attempts + 1):
            try:
                self._db = Rdict(str(self.path), opts, column_families={_META_CF: Options(raw_mode=True)})
                break
            except Exception as exc:  # rocksdict raises a bare Exception for a held LOCK
                if "lock" not in str(exc).lower() or attempt == attempts:
                    if "lock" in str(exc).lower():
                        raise StoreLockedError(
                            f"state store {self.path} is locked by another process after {attempts} attempts; "
                            f"stop the other instance using this state_dir or give each instance its own "
                            f"state_dir") from exc
                    raise
                logger.warning("state store %s is locked, retrying in %.1fs (%d/%d)", self.path,
                               self._options.open_retry_backoff, attempt, attempts - 1)
                time.sleep(self._options.open_retry_backoff)
        self._meta = self._db.get_column_family(_META_CF)
        self._meta_handle = self._db.get_column_family_handle(_META_CF)
        self.processed_offsets = {bytes(key[len(_PROCESSED):]).decode(): int.from_bytes(value, "big", signed=True)
                                  for key, value in self._meta.items(from_key=_PROCESSED)
                                  if bytes(key).startswith(_PROCESSED)}
        self.legacy_processed_offset = _decode_offset(self._meta.get(_LEGACY_PROCESSED))
        self.changelog_offset = _decode_offset(self._meta.get(_CHANGELOG))

    def get(self, key: bytes) -> Optional[bytes]:
        return self._db.get(key)

    def write(self, changes: Dict[bytes, Optional[bytes]], processed_offsets: Optional[Mapping[str, int]],
              changelog_offset: Optional[int]) -> None:
        from rocksdict import WriteBatch

        batch = WriteBatch(raw_mode=True)
        for key, value in changes.items():
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        for topic, offset in (processed_offsets or {}).items():
            batch.put(_PROCESSED + topic.encode(), _encode_offset(offset), self._meta_handle)
        if changelog_offset is not None:
            batch.put(_CHANGELOG, _encode_offset(changelog_offset), self._meta_handle)
        self._db.write(batch)
        if processed_offsets:
            self.processed_offsets.update(processed_offsets)
        if changelog_offset is not None:
            self.changelog_offset = changelog_offset

    def items(self) -> Iterator[Tuple[bytes, bytes]]:
        return self._db.items()

    def clear(self) -> None:
        """Delete the database and start an empty one in its place."""
        self.close()
        shutil.rmtree(self.path, ignore_errors=True)
        self._open()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            # rocksdict releases the LOCK file only once every handle is gone
            self._db = self._meta = self._meta_handle = None
            gc.collect()

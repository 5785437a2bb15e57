"""A small LRU cache with a per-entry time to live, shared by the lookups."""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Any, Callable, Hashable, Tuple, TypedDict

__all__ = ("CacheInfo", "TTLCache")

_MISSING: Any = object()


class CacheInfo(TypedDict):
    """Cache statistics (``SQLiteLookup.cache_info()``)."""

    hits: int
    misses: int
    size: int
    maxsize: int


class TTLCache:
    """``get_or_load(key, ttl, load)``: a cached value younger than ``ttl`` seconds, else ``load()``.

    >>> cache = TTLCache(maxsize=2); cache.get_or_load("a", 60, lambda: 1), cache.get_or_load("a", 60, lambda: 2)
    (1, 1)
    """

    def __init__(self, maxsize: int, clock: Callable[[], float] = time.monotonic) -> None:
        if maxsize < 0:
            raise ValueError(f"cache_size must be >= 0, got {maxsize}")
        self._maxsize = maxsize
        self._clock = clock
        self._entries: "OrderedDict[Hashable, Tuple[float, Any]]" = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get_or_load(self, key: Hashable, ttl: float, load: Callable[[], Any]) -> Any:
        if ttl <= 0:  # no caching at all: neither a miss counted nor an entry kept (as Quix)
            return load()
        entries = self._entries
        now = self._clock()
        found = entries.get(key, _MISSING)
        if found is not _MISSING and found[0] > now:
            entries.move_to_end(key)
            self.hits += 1
            return found[1]
        self.misses += 1
        value = load()
        if self._maxsize:
            entries[key] = (now + ttl, value)
            entries.move_to_end(key)
            while len(entries) > self._maxsize:
                entries.popitem(last=False)
        return value

    def info(self) -> CacheInfo:
        return CacheInfo(hits=self.hits, misses=self.misses, size=len(self._entries), maxsize=self._maxsize)

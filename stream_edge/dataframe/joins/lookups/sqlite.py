"""SQLite lookup join (Quix Streams 3.28 ``SQLiteLookup``, ``SQLiteLookupField``,
``SQLiteLookupQueryField``).

Each field is one query per target key, cached (LRU of ``cache_size`` entries, each kept ``ttl``
seconds). Example::

    lookup = SQLiteLookup(path="devices.db")
    fields = {"device": SQLiteLookupField(table="devices", columns=["name", "model"], on="id")}
    sdf = sdf.join_lookup(lookup, fields, on="device_id")
    # value["device"] == {"name": ..., "model": ...} (or the field's default when no row matches)
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import re
import sqlite3
from functools import partial
from typing import Any, Dict, List, Literal, Mapping, Tuple, Union

from .base import BaseField, BaseLookup
from .utils import CacheInfo, TTLCache

__all__ = ("SQLiteLookup", "SQLiteLookupField", "SQLiteLookupQueryField", "BaseSQLiteLookupField")

logger = logging.getLogger("stream_edge.joins")

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _identifier(name: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(f"Invalid SQL identifier: {name}")
    return name


class BaseSQLiteLookupField(BaseField, abc.ABC):
    """A field of :class:`SQLiteLookup`: builds its query and reads its result."""

    ttl: float
    default: Any
    first_match_only: bool

    @abc.abstractmethod
    def build_query(self, on: str, value: Dict[str, Any]) -> Tuple[str, Any]:
        """The SQL text and its parameters."""

    @abc.abstractmethod
    def result(self, cursor: sqlite3.Cursor) -> Any:
        """The field's value from the executed cursor."""


@dataclasses.dataclass(frozen=True)
class SQLiteLookupField(BaseSQLiteLookupField):
    """Rows of ``table`` whose ``on`` column equals the target key, as ``{column: value}`` dicts:
    the first row (or ``default`` without one) or, with ``first_match_only=False``, all of them."""

    table: str
    columns: List[str]
    on: str
    order_by: str = ""
    order_by_direction: Literal["ASC", "DESC"] = "ASC"
    ttl: float = 60.0
    default: Any = None
    first_match_only: bool = True

    def __post_init__(self) -> None:
        _identifier(self.table)
        for column in self.columns:
            _identifier(column)
        _identifier(self.on)
        if self.order_by:
            _identifier(self.order_by)

    def build_query(self, on: str, value: Dict[str, Any]) -> Tuple[str, Tuple[str, ...]]:
        sql = f"SELECT {', '.join(self.columns)} FROM {self.table} WHERE {self.on} = ?"
        if self.order_by:
            sql += f" ORDER BY {self.order_by} {self.order_by_direction}"
        return sql, (on,)

    def result(self, cursor: sqlite3.Cursor) -> Union[Dict[str, Any], List[Dict[str, Any]]]:
        if self.first_match_only:
            row = cursor.fetchone()
            return self.default if row is None else dict(zip(self.columns, row))
        return [dict(zip(self.columns, row)) for row in cursor.fetchall()]


@dataclasses.dataclass(frozen=True)
class SQLiteLookupQueryField(BaseSQLiteLookupField):
    """Rows of a custom ``query`` whose ``:name`` parameters come from the value's columns, as tuples:
    the first row (or ``default``) or, with ``first_match_only=False``, all of them. The cache is
    per target key (``join_lookup``'s ``on``), not per parameter values."""

    query: str
    ttl: float = 60.0
    default: Any = None
    first_match_only: bool = True

    def build_query(self, on: str, value: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
        return self.query, value

    def result(self, cursor: sqlite3.Cursor) -> Union[Any, List[Any]]:
        if self.first_match_only:
            row = cursor.fetchone()
            return self.default if row is None else row
        return cursor.fetchall()


class SQLiteLookup(BaseLookup[BaseSQLiteLookupField]):
    """Enrich records from a SQLite database file (one connection, opened at creation).

    :param path: the database file.
    :param cache_size: results kept in the LRU cache (one per field and target key); 0 disables it.
    """

    def __init__(self, path: str, cache_size: int = 1000) -> None:
        self._path = path
        self._conn = sqlite3.connect(path, check_same_thread=False)
        self._cache = TTLCache(cache_size)

    def _query(self, field: BaseSQLiteLookupField, on: Any, value: Dict[str, Any]) -> Any:
        sql, params = field.build_query(on, value)
        try:
            cursor = self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            logger.error("SQLite error while executing query: %s", exc)
            raise
        try:
            return field.result(cursor)
        finally:
            cursor.close()

    def join(self, fields: Mapping[str, BaseSQLiteLookupField], on: Any, value: Dict[str, Any], key: Any,
             timestamp: int, headers: Any) -> None:
        """Set ``value[name]`` for each field, querying SQLite on a cache miss."""
        cache, query = self._cache, self._query
        for name, field in fields.items():
            value[name] = cache.get_or_load((id(field), on), field.ttl, partial(query, field, on, value))

    def cache_info(self) -> CacheInfo:
        """Cache statistics: hits, misses, size, maxsize."""
        return self._cache.info()

    def close(self) -> None:
        """Close the database connection."""
        self._conn.close()

    def __del__(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.close()

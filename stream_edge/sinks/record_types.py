"""Per-record type checks for the sinks that write tables (the data-lake sink, ``IcebergSink``).

A record is responsible for itself: whatever about its content the table cannot hold is found in
``add()``, for that record, so the runtime's error callback sees it with the record (topic,
partition, offset) and can skip it, and no other record is held back by it. The check is a type
dispatch on each value's class against the column types known so far, never Arrow per record
(nested values excepted, see below); the buffers then convert their records with exactly these
types, so the write at the checkpoint cannot meet a content error.

The schema policy (``docs/operations.md``, "Error policy"):

- a column's type is set by its first non-null value (or by the table: the lake's commit log, the
  Iceberg schema); a field seen only as null gets no column until it has a value;
- Iceberg's promotions widen a column: ``int -> long`` (an int32 column receiving a value past
  int32) and ``float -> double``;
- JSON writes 20.0 as 20: an int into a double column is stored as a double when exact (|v| <= 2^53);
  a column not yet written to any file whose ints were all exact becomes double when a float
  arrives (the batch the sink holds is converted as a whole); a written long column refuses floats;
- everything else is that record's :class:`SchemaConflictError`: a string where the column was an
  int, a bool where it was an int, an int past int64, a list where an int was, a struct that does
  not merge with the column's struct, a timestamp outside years 1..9999, a hive column holding a
  struct or list, a field named like a derived hive column, a non-string field name.

Nested values (dicts, lists) are inferred by Arrow one value at a time: correct, but slower than
the scalar dispatch (~µs per nested field).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any, Callable, Dict, Iterable, List, Optional, Set, Tuple

import pyarrow as pa

__all__ = ("SchemaConflictError", "ColumnTypes", "TIMESTAMP_MS_RANGE")

_INT64 = (-(2 ** 63), 2 ** 63 - 1)
_INT32 = (-(2 ** 31), 2 ** 31 - 1)
_EXACT_FLOAT_INT = 2 ** 53
#: Epoch milliseconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the timestamps a
#: time partition (``year=...``) and every reader's datetime can represent.
TIMESTAMP_MS_RANGE = (-62_135_596_800_000, 253_402_300_799_999)
_RECOMPILE_AFTER = 128  # records of cached shapes the compiled check missed before it follows them
_MAX_SHAPES = 1024  # distinct record shapes cached (records with many optional fields: cleared when full)
_NO_INTS = object()
_CACHED_INT_TYPES = (pa.int64(), pa.float64())  # a cached shape without int fields
_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                 OverflowError)

# The Arrow type a scalar of each Python class becomes, and the class whose values fit a column of
# that type without any check (the fast path of ``check``).
_SCALAR_TYPES: Dict[type, pa.DataType] = {int: pa.int64(), float: pa.float64(), str: pa.string(),
                                           bool: pa.bool_(), bytes: pa.binary()}
_FAST_CLASS: Dict[pa.DataType, type] = {t: cls for cls, t in _SCALAR_TYPES.items()}
_FAST_CLASS.update({pa.large_string(): str, pa.large_binary(): bytes})  # as pyiceberg's as_arrow() gives them


class _Never:
    """A class no value has: columns mapped to it always take the slow path (reserved names)."""


class SchemaConflictError(TypeError):
    """A record's field cannot be written to its column: names the column, the record and why."""

    def __init__(self, column: str, topic: str, partition: int, offset: Optional[int], detail: str) -> None:
        self.column, self.topic, self.partition, self.offset, self.detail = column, topic, partition, offset, detail
        where = f"{topic}[{partition}] offset {offset}" if offset is not None else f"{topic}[{partition}]"
        super().__init__(f"type conflict in column '{column}' at {where}: {detail}")


def preview(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters (error messages quote the offending value)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class ColumnTypes:
    """The column types of one table, and the check of each record against them.

    :param hive_value_columns: columns that name partition folders (must hold scalars).
    :param reserved: field names a record may not have, with the reason (derived hive columns).
    :param timestamp_column: epoch-ms field that time partitions come from (range-checked).

    ``types`` maps a column to its Arrow type (the buffers convert records with it); ``committed``
    are the columns already in the table's files, whose type no longer changes but by promotion.

    Example::

        types = ColumnTypes()
        types.check({"v": 1}, "t", 0, 0)
        types.check({"v": "x"}, "t", 0, 1)   # SchemaConflictError: column 'v' at t[0] offset 1
    """

    def __init__(self, hive_value_columns: Iterable[str] = (), reserved: Optional[Dict[str, str]] = None,
                 timestamp_column: Optional[str] = None) -> None:
        self.types: Dict[str, pa.DataType] = {}
        self.committed: Set[str] = set()
        self._fast: Dict[Any, type] = {}  # column -> the class whose values need no check
        self._shapes: Dict[Tuple[Any, ...], Any] = {}  # checked record shapes -> getter of their ints
        self._quick: Optional[Callable[[Dict[Any, Any]], bool]] = None  # compiled check of the usual shape
        self._misses = 0  # records the compiled check did not cover since it was compiled
        self._inexact: Set[str] = set()  # int columns holding a value past 2^53 (cannot become double)
        self._hive = frozenset(hive_value_columns)
        self._reserved = dict(reserved or {})
        for name in self._reserved:
            self._fast[name] = _Never
        self._timestamp_column = timestamp_column

    # -- the table's schema ---------------------------------------------------------------------
    def adopt(self, schema: Iterable[pa.Field]) -> None:
        """Take the types of columns already written (the commit log, the Iceberg table)."""
        for field in schema:
            if pa.types.is_null(field.type) or field.name in self._reserved:
                continue
            current = self.types.get(field.name)
            if current is None or field.name not in self.committed:
                self._set(field.name, field.type if current is None else _widest(current, field.type))
            self.committed.add(field.name)

    def mark_committed(self, names: Iterable[str]) -> None:
        """These columns are now in the table's files (after a write)."""
        self.committed.update(name for name in names if name in self.types)

    def _set(self, name: str, kind: pa.DataType) -> None:
        self.types[name] = kind
        self._shapes.clear()  # a cached shape was checked against the old type
        self._quick = None
        self._fast[name] = _FAST_CLASS.get(kind, _Never)

    # -- per record -----------------------------------------------------------------------------
    def check(self, value: Dict[Any, Any], topic: str, partition: int, offset: int) -> None:
        """Raise :class:`SchemaConflictError` if a field of ``value`` cannot be written; else
        record the columns it adds or widens. Nothing changes when the record is refused.

        Records of a shape seen before (the same field names and value classes, no nested value)
        only have their ints bounded (one ``itemgetter``, ``min``/``max``) and their timestamp
        ranged: the per-field dispatch runs once per shape. The most frequent shape gets a check
        compiled for it (one function testing each field's class and bounds inline, ~3x faster
        than the generic path). Both are dropped whenever a column's type changes."""
        quick = self._quick
        if quick is not None and quick(value):
            return
        shape = (*value, *map(type, value.values()))
        ints = self._shapes.get(shape)
        if ints is None:
            self._check_fields(value, topic, partition, offset)
            self._remember(shape, value)
            return
        self._misses += 1
        if quick is None or self._misses >= _RECOMPILE_AFTER:
            self._quick, self._misses = self._compile(value), 0
        if ints is not _NO_INTS:
            found = ints(value)
            if not (-_EXACT_FLOAT_INT <= min(found) and max(found) <= _EXACT_FLOAT_INT):
                self._check_fields(value, topic, partition, offset)
                return
        column = self._timestamp_column
        if column is not None:
            moment = value.get(column)
            if moment is not None and not TIMESTAMP_MS_RANGE[0] <= moment <= TIMESTAMP_MS_RANGE[1]:
                self._bad_timestamp(column, moment, topic, partition, offset)

    def _remember(self, shape: Tuple[Any, ...], value: Dict[Any, Any]) -> None:
        """Cache a checked record's shape (unless it holds nested values, checked each time)."""
        names = []
        for name, field in value.items():
            cls = field.__class__
            if cls is dict or cls is list or cls is tuple or (cls is not int and cls is not float and cls is not str
                                                              and cls is not bool and field is not None):
                return
            if cls is int:
                if self.types.get(name) not in _CACHED_INT_TYPES:
                    return  # an int32 column (from the table): every value is bounded by the slow path
                names.append(name)
        if len(self._shapes) >= _MAX_SHAPES:
            self._shapes.clear()
        self._shapes[shape] = itemgetter(names[0], *names) if names else _NO_INTS

    def _compile(self, value: Dict[Any, Any]) -> Optional[Callable[[Dict[Any, Any]], bool]]:
        """A function telling whether a record has ``value``'s shape and in-bound ints (True: it
        passes the check as is); None when the shape is not cacheable."""
        env: Dict[str, Any] = {"E": _EXACT_FLOAT_INT, "LO": TIMESTAMP_MS_RANGE[0], "HI": TIMESTAMP_MS_RANGE[1],
                               "KEYS": frozenset(value), "int": int, "float": float, "str": str, "bool": bool,
                               "bytes": bytes}
        fetch, tests = [], []
        for index, (name, field) in enumerate(value.items()):
            cls = field.__class__
            var = f"v{index}"
            fetch.append(f"    {var} = value[{name!r}]")
            timestamp = name == self._timestamp_column
            if field is None:
                tests.append(f"{var} is None")
            elif cls is int:
                bound = "LO <= {v} <= HI" if timestamp else "-E <= {v} <= E"
                tests.append(f"{var}.__class__ is int and " + bound.format(v=var))
            elif cls is float:
                tests.append(f"{var}.__class__ is float" + (f" and LO <= {var} <= HI" if timestamp else ""))
            elif cls is str or cls is bool or cls is bytes:
                tests.append(f"{var}.__class__ is {cls.__name__}")
            else:
                return None
        source = "\n".join(["def quick(value):", "    if value.keys() != KEYS:", "        return False", *fetch,
                            "    return " + (" and ".join(tests) or "True")])
        exec(compile(source, "<record-shape-check>", "exec"), env)  # noqa: S102 - our own source, names as repr()
        return env["quick"]  # type: ignore[no-any-return]

    def _check_fields(self, value: Dict[Any, Any], topic: str, partition: int, offset: int) -> None:
        column = self._timestamp_column
        if column is not None:
            moment = value.get(column)
            if moment is not None and (moment.__class__ not in (int, float)
                                       or not TIMESTAMP_MS_RANGE[0] <= moment <= TIMESTAMP_MS_RANGE[1]):
                self._bad_timestamp(column, moment, topic, partition, offset)
        fast = self._fast
        changes: Optional[List[Tuple[str, pa.DataType]]] = None
        for name, field in value.items():
            cls = field.__class__
            if cls is fast.get(name):
                if cls is int and not -_EXACT_FLOAT_INT <= field <= _EXACT_FLOAT_INT:
                    self._large_int(name, field, topic, partition, offset)
                continue
            if field is None and name.__class__ is str and name not in self._reserved:
                continue
            change = self._slow(name, field, topic, partition, offset)
            if change is not None:
                if changes is None:
                    changes = []
                changes.append(change)
        if changes:
            for name, kind in changes:
                self._set(name, kind)
            for name, _kind in changes:
                self._note_exactness(name, value.get(name))

    def _large_int(self, name: str, field: int, topic: str, partition: int, offset: int) -> None:
        kind = self.types[name]
        low, high = _int_bounds(kind)
        if not low <= field <= high:
            if kind == pa.int64():
                raise SchemaConflictError(name, topic, partition, offset,
                                          f"int {preview(field)} is past int64 (the widest integer a table holds)")
            raise AssertionError("a fast-path int column is int64")  # pragma: no cover
        self._inexact.add(name)

    def _note_exactness(self, name: str, field: Any) -> None:
        if field.__class__ is int and not -_EXACT_FLOAT_INT <= field <= _EXACT_FLOAT_INT:
            self._inexact.add(name)

    def _bad_timestamp(self, column: str, moment: Any, topic: str, partition: int, offset: int) -> None:
        if moment.__class__ not in (int, float):
            detail = (f"the timestamp column must hold epoch milliseconds (int/float); got "
                      f"{type(moment).__name__} {preview(moment)}")
        else:
            detail = (f"{type(moment).__name__} {preview(moment)} is outside years 1..9999 (the column must "
                      f"hold epoch milliseconds within {TIMESTAMP_MS_RANGE[0]}..{TIMESTAMP_MS_RANGE[1]})")
        raise SchemaConflictError(column, topic, partition, offset, detail)

    def _slow(self, name: Any, field: Any, topic: str, partition: int,
              offset: int) -> Optional[Tuple[str, pa.DataType]]:
        """The field's column after this record (None: unchanged), or its error."""
        if name.__class__ is not str:
            raise SchemaConflictError(repr(name), topic, partition, offset,
                                      f"field names must be strings, got {type(name).__name__} {preview(name)}")
        reason = self._reserved.get(name)
        if reason is not None:
            raise SchemaConflictError(name, topic, partition, offset, reason)
        known = self.types.get(name)
        cls = field.__class__
        if known is None:
            kind = self._new_column_type(name, field, topic, partition, offset)
            return None if kind is None else (name, kind)
        if cls is int:
            if pa.types.is_integer(known):
                low, high = _int_bounds(known)
                if low <= field <= high:
                    return None
                if _INT64[0] <= field <= _INT64[1]:
                    return name, pa.int64()  # Iceberg's int -> long
                raise SchemaConflictError(name, topic, partition, offset,
                                          f"int {preview(field)} is past int64 (the widest integer a table holds)")
            if pa.types.is_floating(known):
                if -_EXACT_FLOAT_INT <= field <= _EXACT_FLOAT_INT:
                    return None  # stored as a double, exactly
                raise self._conflict(name, field, known, topic, partition, offset,
                                     "an int past 2^53 is not exact as a double")
        elif cls is float:
            if pa.types.is_floating(known):
                return None if known == pa.float64() else (name, pa.float64())  # float -> double
            if pa.types.is_integer(known):
                if name not in self.committed and name not in self._inexact:
                    return name, pa.float64()  # not written yet, every int exact: the column is double
                why = ("the column was written as integers" if name in self.committed
                       else "an earlier int of this column is past 2^53, not exact as a double")
                raise self._conflict(name, field, known, topic, partition, offset, why)
        elif cls is str:
            if pa.types.is_large_string(known) or pa.types.is_string(known):
                return None
        elif cls is bytes:
            if pa.types.is_binary(known) or pa.types.is_large_binary(known) or pa.types.is_fixed_size_binary(known):
                return None
        elif cls is bool:
            pass  # a bool fits a bool column only (the fast path): never an int or a string
        elif cls is dict or cls is list or cls is tuple:
            kind = self._nested_type(name, field, topic, partition, offset)
            if kind == known:
                return None
            try:
                merged = pa.unify_schemas([pa.schema([pa.field(name, known)]), pa.schema([pa.field(name, kind)])])
            except _ARROW_ERRORS:
                raise self._conflict(name, field, known, topic, partition, offset,
                                     f"its type {kind} does not merge with the column's") from None
            merged_type = merged.field(name).type
            return None if merged_type == known else (name, merged_type)
        elif not pa.types.is_null(known):
            try:  # any other class (datetime, Decimal, numpy scalars): does Arrow take it as is?
                pa.array([field], type=known)
                return None
            except _ARROW_ERRORS:
                pass
        if pa.types.is_null(known):
            return name, self._new_column_type(name, field, topic, partition, offset) or known
        raise self._conflict(name, field, known, topic, partition, offset)

    def _new_column_type(self, name: str, field: Any, topic: str, partition: int,
                         offset: int) -> Optional[pa.DataType]:
        cls = field.__class__
        kind = _SCALAR_TYPES.get(cls)
        if kind is not None:
            if cls is int and not _INT64[0] <= field <= _INT64[1]:
                raise SchemaConflictError(name, topic, partition, offset,
                                          f"int {preview(field)} is past int64 (the widest integer a table holds)")
        elif cls is dict or cls is list or cls is tuple:
            kind = self._nested_type(name, field, topic, partition, offset)
        else:
            try:
                kind = pa.array([field]).type
            except _ARROW_ERRORS as exc:
                raise SchemaConflictError(name, topic, partition, offset,
                                          f"{type(field).__name__} {preview(field)} cannot be stored in a table "
                                          f"column ({exc})") from None
        if name in self._hive and (pa.types.is_nested(kind)):
            raise SchemaConflictError(name, topic, partition, offset,
                                      f"hive column must hold scalar values, got {type(field).__name__} "
                                      f"{preview(field)}")
        return None if pa.types.is_null(kind) else kind

    @staticmethod
    def _nested_type(name: str, field: Any, topic: str, partition: int, offset: int) -> pa.DataType:
        try:
            return pa.array([field]).type
        except _ARROW_ERRORS as exc:
            raise SchemaConflictError(name, topic, partition, offset,
                                      f"{type(field).__name__} {preview(field)} has no single Arrow type "
                                      f"({exc})") from None

    @staticmethod
    def _conflict(name: str, field: Any, known: pa.DataType, topic: str, partition: int, offset: int,
                  why: str = "") -> SchemaConflictError:
        detail = f"{type(field).__name__} {preview(field)} does not fit column type {known}"
        return SchemaConflictError(name, topic, partition, offset,
                                   f"{detail} ({why})" if why else
                                   f"{detail}; not coercing (rename the field or convert it upstream)")


def _int_bounds(kind: pa.DataType) -> Tuple[int, int]:
    if kind == pa.int64():
        return _INT64
    if kind == pa.int32():
        return _INT32
    width = kind.bit_width
    if pa.types.is_unsigned_integer(kind):
        return 0, 2 ** width - 1
    return -(2 ** (width - 1)), 2 ** (width - 1) - 1


def _widest(current: pa.DataType, other: pa.DataType) -> pa.DataType:
    """Two writers' types of one column: the promoted one when Arrow can promote, else ours."""
    try:
        merged = pa.unify_schemas([pa.schema([pa.field("c", current)]), pa.schema([pa.field("c", other)])],
                                  promote_options="permissive")
        return merged.field("c").type
    except _ARROW_ERRORS:
        return current

"""``PostgreSQLSink``: processed records into PostgreSQL tables (Quix Streams 3.x API).

A batching sink: records are kept per topic partition and written at each checkpoint, one
transaction per flush, with ``COPY`` (append) or ``COPY`` into a staging table followed by
``INSERT ... ON CONFLICT`` (upsert / do-nothing on a primary key). Tables and columns are created
as records need them (``schema_auto_update``); a record whose field does not fit its column is
refused with an error naming the record and the field. A server that refuses the write or does
not answer in time (connection lost, statement timeout, lock timeout, too many connections)
raises :class:`SinkBackpressureError`, so the partition is replayed later: nothing is lost.

Needs the ``edge-postgres`` extra (``pip install streaming-lakehouse[edge-postgres]``); this
module imports without it.

Example::

    from stream_edge.sinks.community.postgresql import PostgreSQLSink

    sink = PostgreSQLSink(host="127.0.0.1", port=5432, dbname="postgres", user="postgres",
                          password="", table_name="readings", primary_key_columns=["id"],
                          upsert_on_primary_key=True)
    sdf.sink(sink)
"""

from __future__ import annotations

import datetime as dt
import decimal
import logging
import operator
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import SinkItem
from stream_edge.sinks.base.sink import (
    BatchingSink,
    ClientConnectFailureCallback,
    ClientConnectSuccessCallback,
)

__all__ = (
    "PostgreSQLSink",
    "PostgreSQLSinkException",
    "PostgresSQLSinkMissingExistingPK",
    "PostgresSQLSinkInvalidPK",
    "PostgresSQLSinkPKNullValue",
)

logger = logging.getLogger(__name__)

TableName = Union[Callable[[SinkItem], str], str]
PrimaryKeyColumns = Union[Sequence[str], str, Callable[[Any], Union[Sequence[str], str]]]

KEY_COLUMN = "__key"
TIMESTAMP_COLUMN = "timestamp"
_EXTRA = "pip install streaming-lakehouse[edge-postgres]"


class PostgreSQLSinkException(QuixException):
    """A record or a configuration the sink cannot write."""


class PostgresSQLSinkMissingExistingPK(PostgreSQLSinkException):
    """``primary_key_columns`` leaves out a primary key column the table already has."""


class PostgresSQLSinkInvalidPK(PostgreSQLSinkException):
    """``primary_key_columns`` is not a string, a list of strings, or a callable returning one."""


class PostgresSQLSinkPKNullValue(PostgreSQLSinkException):
    """A record has no value (or null) for a primary key column."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(f"PostgreSQLSink needs the 'psycopg' package: {_EXTRA}") from exc
    return psycopg


def _where(item: SinkItem, topic: str, partition: int) -> str:
    return f"topic '{topic}' partition {partition} offset {item.offset}"


# Python type of a value -> PostgreSQL column type created for it (bool before int).
_PG_TYPES: List[Tuple[type, str]] = [
    (bool, "BOOLEAN"), (int, "BIGINT"), (float, "DOUBLE PRECISION"), (decimal.Decimal, "NUMERIC"),
    (str, "TEXT"), (bytes, "BYTEA"), (bytearray, "BYTEA"), (dt.datetime, "TIMESTAMP"),
    (dt.date, "DATE"), (dt.time, "TIME"), (uuid.UUID, "UUID"),
    (dict, "JSONB"), (list, "JSONB"), (tuple, "JSONB"),
]
_JSON_TYPES = (dict, list, tuple, str, int, float, bool)
# Column type (information_schema.columns.data_type) -> Python types accepted in it. Types not
# listed are left to the server.
_ACCEPTS: Dict[str, Tuple[type, ...]] = {
    "bigint": (int,), "integer": (int,), "smallint": (int,),
    "double precision": (int, float, decimal.Decimal), "real": (int, float, decimal.Decimal),
    "numeric": (int, float, decimal.Decimal),
    "text": (str,), "character varying": (str,), "character": (str,),
    "boolean": (bool,), "bytea": (bytes, bytearray),
    "timestamp without time zone": (dt.datetime,), "timestamp with time zone": (dt.datetime,),
    "date": (dt.date,), "time without time zone": (dt.time,), "uuid": (uuid.UUID, str),
    "jsonb": _JSON_TYPES, "json": _JSON_TYPES,
}


# The exact types a column takes without a closer look (a fast check per column and batch).
_EXACT: Dict[str, set] = {name: {t for t in types if t is not bool or name == "boolean"} | {type(None)}
                          for name, types in _ACCEPTS.items() if name not in ("jsonb", "json")}
_EPOCH = dt.datetime(1970, 1, 1)


def pg_type_for(value: Any) -> Optional[str]:
    """The column type created for a value (None for a type the sink does not map).

    >>> pg_type_for(True), pg_type_for(3), pg_type_for({"a": 1}), pg_type_for(object())
    ('BOOLEAN', 'BIGINT', 'JSONB', None)
    """
    for py_type, pg_type in _PG_TYPES:
        if isinstance(value, py_type):
            return pg_type
    return None


def _accepts(column_type: str, value: Any) -> bool:
    allowed = _ACCEPTS.get(column_type)
    if allowed is None:
        return True
    if isinstance(value, bool) and bool not in allowed and column_type not in ("jsonb", "json"):
        return False
    return isinstance(value, allowed)


class _Table:
    """What the sink knows of one table: its columns (name -> data_type) and primary key."""

    def __init__(self, columns: Dict[str, str], primary_key: List[str]) -> None:
        self.columns = columns
        self.primary_key = primary_key


class PostgreSQLSink(BatchingSink):
    """Writes each record (a dict) as one row of a PostgreSQL table.

    Columns: one per value field, plus ``__key`` (the message key, TEXT) and ``timestamp`` (the
    message timestamp, TIMESTAMP in UTC) unless ``include_metadata=False``. New fields become new
    columns when ``schema_auto_update`` is on (the table is created on first write; a field seen
    only as null gets no column until it has a value); a field whose type does not fit its
    existing column fails the flush with an error naming the record and the field.

    :param host: server address. :param port: server port. :param dbname: database.
    :param user: user name. :param password: password.
    :param table_name: a table name, or a callable ``SinkItem -> str``.
    :param schema_name: the schema (namespace) of the tables; created when missing.
    :param schema_auto_update: create tables, columns and primary keys as records need them.
    :param connection_timeout_seconds: connection timeout.
    :param statement_timeout_seconds: server-side timeout of every statement of the sink (DDL and
        writes); a write that takes longer is backpressure.
    :param primary_key_columns: a column name, a list of names, or a callable ``value -> names``.
        It must include every primary key column the table already has.
    :param upsert_on_primary_key: update rows whose primary key exists (the batch's last record
        per key wins); without it a key collision is an error.
    :param on_conflict_do_nothing: keep existing rows on a key collision.
    :param include_metadata: add the ``__key`` and ``timestamp`` columns.
    :param on_client_connect_success: called after the connection is made.
    :param on_client_connect_failure: called with the exception when connecting failed.
    :param backpressure_retry_seconds: pause before a refused write is retried (edge extension).
    :param kwargs: more arguments for ``psycopg.connect``.
    """

    def __init__(
        self,
        host: str,
        port: int,
        dbname: str,
        user: str,
        password: str,
        table_name: TableName,
        schema_name: str = "public",
        schema_auto_update: bool = True,
        connection_timeout_seconds: int = 30,
        statement_timeout_seconds: int = 30,
        primary_key_columns: PrimaryKeyColumns = (),
        upsert_on_primary_key: bool = False,
        on_conflict_do_nothing: bool = False,
        include_metadata: bool = True,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
        backpressure_retry_seconds: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        _psycopg()
        if upsert_on_primary_key and on_conflict_do_nothing:
            raise ValueError("upsert_on_primary_key and on_conflict_do_nothing cannot both be True")
        if not (isinstance(table_name, str) and table_name) and not callable(table_name):
            raise ValueError(f"table_name must be a non-empty string or a callable, got {table_name!r}")
        self._static_pk = None if callable(primary_key_columns) else self._pk_list(primary_key_columns)
        if (upsert_on_primary_key or on_conflict_do_nothing) and self._static_pk == []:
            raise PostgresSQLSinkInvalidPK("upsert_on_primary_key/on_conflict_do_nothing need primary_key_columns")
        self._connect_args = dict(host=host, port=port, dbname=dbname, user=user, password=password,
                                  connect_timeout=connection_timeout_seconds, **kwargs)
        self._table_name = table_name
        self._schema = schema_name
        self._auto_update = schema_auto_update
        self._statement_timeout_ms = int(statement_timeout_seconds * 1000)
        self._pk_columns = primary_key_columns
        self._upsert = upsert_on_primary_key
        self._do_nothing = on_conflict_do_nothing
        self._include_metadata = include_metadata
        self.backpressure_retry_seconds = backpressure_retry_seconds
        self._conn: Any = None
        self._tables: Dict[str, _Table] = {}
        self._schema_ready = False

    # -- connection ------------------------------------------------------------------------------
    def setup(self) -> None:
        """Connect, and create the schema when ``schema_auto_update`` is on."""
        self._connect()

    def _connect(self) -> Any:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        psycopg = _psycopg()
        self._tables.clear()
        self._schema_ready = False
        self._conn = psycopg.connect(**self._connect_args,
                                     options=f"-c statement_timeout={self._statement_timeout_ms}")
        if self._auto_update:
            from psycopg import sql

            with self._conn.transaction():
                self._conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema)))
        self._schema_ready = True
        return self._conn

    def cleanup(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- writing ---------------------------------------------------------------------------------
    def write(self, batch: SinkBatch) -> None:
        """Write one partition's batch in one transaction (see the class docstring)."""
        psycopg = _psycopg()
        groups = self._group(batch)
        try:
            conn = self._connect()
            with conn.transaction():
                for (table, pk), items in groups.items():
                    self._write_table(conn, batch, table, list(pk), items)
        except psycopg.OperationalError as exc:
            self._tables.clear()
            if self._conn is not None and self._conn.broken:
                self._conn = None
            logger.warning("PostgreSQL refused the write of %s[%s] (%s); retrying in %ss",
                           batch.topic, batch.partition, str(exc).strip(), self.backpressure_retry_seconds)
            raise SinkBackpressureError(self.backpressure_retry_seconds, batch.topic, batch.partition) from exc
        except BaseException:
            self._tables.clear()  # the transaction rolled back whatever DDL it ran
            raise

    def _group(self, batch: SinkBatch) -> Dict[Tuple[str, Tuple[str, ...]], List[SinkItem]]:
        items = list(batch)
        if {type(item.value) for item in items} == {dict} and isinstance(self._table_name, str) \
                and self._static_pk is not None:  # the common case: one table, one key
            return {(self._table_name, tuple(self._static_pk)): items}
        groups: Dict[Tuple[str, Tuple[str, ...]], List[SinkItem]] = {}
        for item in items:
            if not isinstance(item.value, dict):
                raise PostgreSQLSinkException(
                    f"PostgreSQLSink needs dict values; got {type(item.value).__name__} at "
                    f"{_where(item, batch.topic, batch.partition)}")
            table = self._table_name(item) if callable(self._table_name) else self._table_name
            if not isinstance(table, str) or not table:
                raise PostgreSQLSinkException(f"table_name returned {table!r} for "
                                              f"{_where(item, batch.topic, batch.partition)}")
            pk = self._static_pk
            if pk is None:
                assert callable(self._pk_columns)
                pk = self._pk_list(self._pk_columns(item.value))
            groups.setdefault((table, tuple(pk)), []).append(item)
        return groups

    @staticmethod
    def _pk_list(columns: Any) -> List[str]:
        if isinstance(columns, str):
            return [columns] if columns else []
        if isinstance(columns, (list, tuple)) and all(isinstance(c, str) and c for c in columns):
            return list(columns)
        raise PostgresSQLSinkInvalidPK(f"primary_key_columns must be a string or a list of strings, got {columns!r}")

    def _rows(self, batch: SinkBatch, items: List[SinkItem], pk: List[str]) -> Tuple[List[str], List[Dict[str, Any]]]:
        """Each item as a dict of column -> value (metadata included; rows are the values themselves
        without metadata, never modified), checked, and the fields seen, in first-seen order."""
        epoch, millis = _EPOCH, dt.timedelta(milliseconds=1)
        rows: List[Dict[str, Any]] = []
        append = rows.append
        seen: Dict[Any, Any] = {}
        if self._include_metadata:
            for item in items:
                key = item.key
                if type(key) is bytes:
                    try:
                        key = key.decode()
                    except UnicodeDecodeError:
                        raise PostgreSQLSinkException(
                            f"field '{KEY_COLUMN}' of {_where(item, batch.topic, batch.partition)}: the message "
                            f"key is not UTF-8 text ({key[:32]!r})") from None
                elif key is not None and type(key) is not str:
                    key = str(key)
                row = {**item.value, KEY_COLUMN: key, TIMESTAMP_COLUMN: epoch + item.timestamp * millis}
                seen.update(row)
                append(row)
        else:
            for item in items:
                seen.update(item.value)
                append(item.value)
        for name in seen:
            if not isinstance(name, str) or not name or len(name.encode()) > 63:
                item = next(i for r, i in zip(rows, items) if name in r)
                raise PostgreSQLSinkException(
                    f"field {name!r} of {_where(item, batch.topic, batch.partition)} is not a valid "
                    f"column name (a non-empty string of at most 63 bytes)")
        for name in pk:
            for row, item in zip(rows, items):
                if row.get(name) is None:
                    raise PostgresSQLSinkPKNullValue(
                        f"primary key field '{name}' of {_where(item, batch.topic, batch.partition)} is "
                        f"missing or null")
        fields = seen
        return list(fields), rows

    def _write_table(self, conn: Any, batch: SinkBatch, table: str, pk: List[str], items: List[SinkItem]) -> None:
        from psycopg import sql
        from psycopg.types.json import Jsonb

        fields, rows = self._rows(batch, items, pk)
        known = self._ensure_table(conn, batch, table, pk, fields, rows, items)
        columns = [f for f in fields if f in known.columns]
        types = [known.columns[c] for c in columns]
        json_cols = {i for i, t in enumerate(types) if t in ("jsonb", "json")}
        if self._upsert:
            key_of = operator.itemgetter(*pk)  # the batch's last record per key wins
            pairs = list({key_of(row): (row, item) for row, item in zip(rows, items)}.values())
        else:
            pairs = list(zip(rows, items))
        values = _column_values([row for row, _ in pairs], columns, mutable=bool(json_cols))
        # One pass per column: the set of Python types it holds says whether the slow,
        # record-naming check below is needed.
        column_types = [set(map(type, column)) for column in zip(*values)] if values else [set() for _ in columns]
        for i, (col, col_type) in enumerate(zip(columns, types)):
            allowed = _EXACT.get(col_type)
            if allowed is not None and not column_types[i] <= allowed:
                for out, (_, item) in zip(values, pairs):  # the slow path finds the record
                    value = out[i]
                    if value is not None and not _accepts(col_type, value):
                        raise PostgreSQLSinkException(
                            f"field '{col}' of {_where(item, batch.topic, batch.partition)} is "
                            f"{type(value).__name__} {_preview(value)}, but column {self._schema}.{table}.{col} "
                            f"is {col_type}")
            if i in json_cols:
                for out in values:
                    if out[i] is not None:
                        out[i] = Jsonb(out[i])
        target = sql.Identifier(self._schema, table)
        column_list = sql.SQL(", ").join(map(sql.Identifier, columns))
        if not pk or not (self._upsert or self._do_nothing):
            self._copy(conn, sql.SQL("COPY {} ({}) FROM STDIN").format(target, column_list), values,
                       batch, table, pairs)
            return
        stage = sql.Identifier(f"_se_stage_{uuid.uuid4().hex[:12]}")
        conn.execute(sql.SQL("CREATE TEMP TABLE {} (LIKE {}) ON COMMIT DROP").format(stage, target))
        self._copy(conn, sql.SQL("COPY {} ({}) FROM STDIN").format(stage, column_list), values, batch, table, pairs)
        pk_list = sql.SQL(", ").join(map(sql.Identifier, pk))
        others = [c for c in columns if c not in pk]
        action: Any
        if self._upsert and others:
            action = sql.SQL("DO UPDATE SET {}").format(sql.SQL(", ").join(
                sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in others))
        else:
            action = sql.SQL("DO NOTHING")
        conn.execute(sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT ({}) {}").format(
            target, column_list, column_list, stage, pk_list, action))

    def _copy(self, conn: Any, statement: Any, values: List[List[Any]], batch: SinkBatch, table: str,
              pairs: List[Tuple[Dict[str, Any], SinkItem]]) -> None:
        psycopg = _psycopg()
        try:
            with conn.cursor() as cur, cur.copy(statement) as copy:
                for out in values:
                    copy.write_row(out)
        except (psycopg.DataError, psycopg.IntegrityError) as exc:
            raise PostgreSQLSinkException(self._explain(exc, batch, table, pairs)) from exc

    def _explain(self, exc: Exception, batch: SinkBatch, table: str,
                 pairs: List[Tuple[Dict[str, Any], SinkItem]]) -> str:
        """Name the record (COPY reports the failing line) and the field of a refused row."""
        diag = getattr(exc, "diag", None)
        context = getattr(diag, "context", None) or ""
        column = getattr(diag, "column_name", None)
        where = f"a record of {batch.topic}[{batch.partition}]"
        marker = "line "
        if marker in context:
            try:
                line = int(context.split(marker, 1)[1].split(",")[0].split()[0])
                row, item = pairs[line - 1]
                where = _where(item, batch.topic, batch.partition)
                if column is None and ", column " in context:
                    column = context.split(", column ", 1)[1].split(":")[0].strip()
            except (ValueError, IndexError):
                pass
        field = f"field '{column}' of " if column else ""
        return f"PostgreSQL refused {field}{where} for table {self._schema}.{table}: {str(exc).strip()}"

    # -- schema ----------------------------------------------------------------------------------
    def _load(self, conn: Any, table: str) -> Optional[_Table]:
        rows = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = %s", (self._schema, table)).fetchall()
        if not rows:
            return None
        pk = conn.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) AND i.indisprimary",
            (f'"{self._schema}"."{table}"',)).fetchall()
        return _Table(dict(rows), [r[0] for r in pk])

    def _ensure_table(self, conn: Any, batch: SinkBatch, table: str, pk: List[str], fields: List[str],
                      rows: List[Dict[str, Any]], items: List[SinkItem]) -> _Table:
        from psycopg import sql

        known = self._tables.get(table) or self._load(conn, table)
        missing = [f for f in fields if known is None or f not in known.columns]
        new_types: Dict[str, str] = {}
        for name in missing:
            for row, item in zip(rows, items):
                value = row.get(name)
                if value is None:
                    continue
                pg_type = pg_type_for(value)
                if pg_type is None:
                    raise PostgreSQLSinkException(
                        f"field '{name}' of {_where(item, batch.topic, batch.partition)} has type "
                        f"{type(value).__name__}, which has no PostgreSQL column type")
                new_types[name] = pg_type
                break
        if known is not None and pk and not set(known.primary_key) <= set(pk):
            raise PostgresSQLSinkMissingExistingPK(
                f"table {self._schema}.{table} has primary key {known.primary_key}; primary_key_columns "
                f"{pk} must include all of it")
        target = sql.Identifier(self._schema, table)
        if known is None and not self._auto_update:
            raise PostgreSQLSinkException(f"table {self._schema}.{table} does not exist and "
                                          f"schema_auto_update is off")
        if new_types and not self._auto_update:
            name = next(iter(new_types))
            item = next(i for r, i in zip(rows, items) if r.get(name) is not None)
            raise PostgreSQLSinkException(
                f"field '{name}' of {_where(item, batch.topic, batch.partition)} has no column in "
                f"{self._schema}.{table} and schema_auto_update is off")
        if known is None:
            defs: List[Any] = [sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in new_types.items()]
            if self._include_metadata:
                defs = [sql.SQL('"timestamp" TIMESTAMP NOT NULL'), sql.SQL('"__key" TEXT')] + [
                    d for n, d in zip(new_types, defs) if n not in (KEY_COLUMN, TIMESTAMP_COLUMN)]
            if pk:
                defs.append(sql.SQL("PRIMARY KEY ({})").format(sql.SQL(", ").join(map(sql.Identifier, pk))))
            conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(target, sql.SQL(", ").join(defs)))
        else:
            for name, pg_type in new_types.items():
                conn.execute(sql.SQL("ALTER TABLE {} ADD COLUMN IF NOT EXISTS {} {}").format(
                    target, sql.Identifier(name), sql.SQL(pg_type)))
            if pk and set(pk) != set(known.primary_key):
                if not self._auto_update:
                    raise PostgresSQLSinkInvalidPK(
                        f"table {self._schema}.{table} has primary key {known.primary_key}, not {pk}, "
                        f"and schema_auto_update is off")
                if known.primary_key:
                    constraint = conn.execute(
                        "SELECT conname FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'",
                        (f'"{self._schema}"."{table}"',)).fetchone()[0]
                    conn.execute(sql.SQL("ALTER TABLE {} DROP CONSTRAINT {}").format(target, sql.Identifier(constraint)))
                conn.execute(sql.SQL("ALTER TABLE {} ADD PRIMARY KEY ({})").format(
                    target, sql.SQL(", ").join(map(sql.Identifier, pk))))
        if known is None or new_types or (pk and set(pk) != set(known.primary_key)):
            known = self._load(conn, table)
            assert known is not None
        self._tables[table] = known
        return known


def _column_values(rows: List[Dict[str, Any]], columns: List[str], mutable: bool) -> List[Any]:
    """Each row's values in ``columns`` order (None where a row lacks a column), as lists when
    ``mutable``. Rows that all hold every column take C-speed ``itemgetter`` (the common case)."""
    if len(columns) > 1:
        try:
            values: List[Any] = list(map(operator.itemgetter(*columns), rows))
        except KeyError:
            pass
        else:
            return list(map(list, values)) if mutable else values
    return [[*map(row.get, columns)] for row in rows]


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

"""The changes of a changelog table as one row per change, checked, then one change per key.

A changelog table is what the edge lands with ``include_kafka_metadata=True`` and ``register``
makes a table: the value's fields, ``_kafka_topic/_partition/_offset/_timestamp/_key`` and
``_kafka_tombstone`` (true for a tombstone). Two readings of a change:

* **plain**: the key is the Kafka key as its serializer wrote it, as a string, in the column
  ``key`` (or ``--key-column``); the row is the value's fields; a tombstone deletes the key;
* **debezium**: the value is Debezium's envelope (``op``, ``before``, ``after``, ``source``,
  optionally wrapped in ``payload`` by a JSON converter with schemas); the key columns are the
  fields of the Kafka key (a JSON object, optionally wrapped in ``payload`` too), the row is
  ``after``'s fields; ``op`` ``c``/``u`` upsert, ``d`` and tombstones delete, ``r`` (a snapshot
  read) inserts a key the table does not hold at its place in the log and never replaces a row.

A change that has no key (no Kafka key, or a key field missing or NULL), or whose envelope cannot
be read (``op`` missing or unknown, no ``after`` for ``c``/``u``/``r``), is set aside with its
coordinates and the reason (``__reject``): it is that change's error, never the run's.

Per key, the last change in Kafka order (``_kafka_partition``, ``_kafka_offset``) wins
(:func:`last_change_per_key`), with the snapshot-read rule above: exactly what applying every
change in order would leave, so a run's result does not depend on where runs start and stop.

Everything is SQL text (``selectExpr``): one message per step over Spark Connect.

Example::

    layout = plain_layout(source_df.columns, time_partitions={"year", "day"}, key_column="key")
    changes = normalize(source_df, layout)
    merged = last_change_per_key(changes.where("__reject IS NULL"), layout)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from lakehouse.identifiers import quote_identifier as q
from lakehouse.identifiers import sql_string

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ("CHANGE_COLUMNS", "KAFKA_COLUMNS", "Layout", "debezium_layout", "key_fields_of", "last_change_per_key",
           "normalize", "plain_layout", "rejects_of")

KAFKA_COLUMNS = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key")
#: columns every changelog row has besides the value's (the edge's metadata, and the tombstone flag)
CHANGE_COLUMNS = (*KAFKA_COLUMNS, "_kafka_tombstone")
TIME_PARTITIONS = ("year", "month", "day", "hour")


@dataclass(frozen=True)
class Layout:
    """How to read the changes: the keyed table's key and value columns, each with the SQL
    expression over a changelog row that gives it."""

    cdc: str | None
    keys: tuple[tuple[str, str], ...]      # (column, expression)
    values: tuple[tuple[str, str], ...]    # (column, expression)
    action: str                            # SQL: 'upsert' | 'delete' | 'snapshot', NULL when unreadable
    reject: str                            # SQL: why the change is set aside, NULL when it is not
    key_parse: str | None = None           # debezium: the parsed Kafka key, as ``__k``

    @property
    def key_columns(self) -> list[str]:
        return [name for name, _ in self.keys]

    @property
    def value_columns(self) -> list[str]:
        return [name for name, _ in self.values]


def _require_kafka_columns(columns: Sequence[str]) -> None:
    missing = [c for c in ("_kafka_partition", "_kafka_offset", "_kafka_key") if c not in columns]
    if missing:
        raise ValueError(f"the source has no {', '.join(missing)} column(s): land the topic with "
                         "DataLakeSink(include_kafka_metadata=True) (the edge service does unless "
                         "LAKE_KAFKA_METADATA=false) and register it")


def _tombstone_sql(columns: Sequence[str]) -> str:
    return "coalesce(_kafka_tombstone, false)" if "_kafka_tombstone" in columns else "false"


def plain_layout(columns: Sequence[str], time_partitions: Iterable[str], key_column: str = "key") -> Layout:
    """Plain keyed changes: the key column from the Kafka key, every value field as it is.

    The time partition columns the edge derived (``year``/``month``/``day``/``hour`` partitions of
    the source) and the metadata are not the value's; a value field named like the key column is
    shadowed by the key.

    >>> layout = plain_layout(["name", "v", "year", "_kafka_key", "_kafka_partition", "_kafka_offset", "_kafka_tombstone"],
    ...                       {"year"})
    >>> layout.key_columns, layout.value_columns
    (['key'], ['name', 'v'])
    """
    _require_kafka_columns(columns)
    derived = set(time_partitions) & set(TIME_PARTITIONS)
    values = tuple((c, q(c)) for c in columns if c not in CHANGE_COLUMNS and c not in derived and c != key_column)
    return Layout(
        cdc=None, keys=((key_column, "CAST(_kafka_key AS STRING)"),), values=values,
        action=f"CASE WHEN {_tombstone_sql(columns)} THEN 'delete' ELSE 'upsert' END",
        reject="CASE WHEN _kafka_key IS NULL THEN 'no key: the change has no Kafka key' END")


def key_fields_of(sample_keys: Iterable[bytes | str | None]) -> tuple[list[str], bool]:
    """The fields of Debezium keys (JSON objects, perhaps wrapped in ``payload`` with a
    ``schema``) from a sample of them, and whether they are wrapped; ([], False) when none reads.

    >>> key_fields_of([b'{"id": 1}', b'{"id": 2, "region": "eu"}'])
    (['id', 'region'], False)
    >>> key_fields_of([b'{"schema": {}, "payload": {"id": 1}}'])
    (['id'], True)
    >>> key_fields_of([b'not json', None])
    ([], False)
    """
    fields: dict[str, None] = {}
    wrapped = False
    for raw in sample_keys:
        if raw is None:
            continue
        try:
            key = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(key, dict) and "payload" in key and "schema" in key and isinstance(key["payload"], dict):
            key, wrapped = key["payload"], True
        if isinstance(key, dict):
            fields.update(dict.fromkeys(str(name) for name in key))
    return list(fields), wrapped


def debezium_layout(columns: Sequence[str], field_types: dict[str, Any], key_fields: Sequence[str],
                    key_types: dict[str, str], wrapped_key: bool) -> Layout:
    """Debezium envelopes: key columns from the Kafka key's fields (typed as ``key_types``, SQL
    type text), value columns from ``after``'s fields (``field_types``: the source's column name ->
    Spark ``DataType``, for the envelope's columns).

    ``payload`` stands for the envelope when the source has it and no ``op`` column (a JSON
    converter with ``schemas.enable=true``)."""
    _require_kafka_columns(columns)
    if not key_fields:
        raise ValueError("--cdc debezium: no Kafka key of the new changes is a JSON object, so the key "
                         "columns are unknown (Debezium writes the table's primary key as the Kafka key)")
    prefix = "payload." if "op" not in columns and "payload" in columns else ""
    envelope = field_types.get("payload") if prefix else None
    names = (set(f.name for f in envelope.fields) if envelope is not None and hasattr(envelope, "fields")
             else set(columns))
    after_type = (dict((f.name, f.dataType) for f in envelope.fields).get("after") if prefix and envelope is not None
                  and hasattr(envelope, "fields") else field_types.get("after"))
    after_fields = [f.name for f in after_type.fields] if after_type is not None and hasattr(after_type, "fields") else []
    op = f"{prefix}op" if "op" in names else "CAST(NULL AS STRING)"
    after = f"{prefix}after" if "after" in names else None
    typed = [(q(name), key_types.get(name, "STRING")) for name in key_fields]
    if wrapped_key:
        schema = "payload STRUCT<" + ", ".join(f"{name}: {kind}" for name, kind in typed) + ">"
    else:
        schema = ", ".join(f"{name} {kind}" for name, kind in typed)
    key_parse = f"from_json(CAST(_kafka_key AS STRING), {sql_string(schema)})"
    base = "__k.payload" if wrapped_key else "__k"
    keys = tuple((name, f"{base}.{q(name)}") for name in key_fields)
    values = tuple((name, f"{after}.{q(name)}") for name in after_fields if name not in key_fields) if after else ()
    has_after = f"{after} IS NOT NULL" if after else "false"
    action = (f"CASE WHEN {_tombstone_sql(columns)} THEN 'delete' WHEN {op} = 'd' THEN 'delete' "
              f"WHEN {op} IN ('c', 'u') AND {has_after} THEN 'upsert' "
              f"WHEN {op} = 'r' AND {has_after} THEN 'snapshot' END")
    missing_key = " OR ".join(f"{expr} IS NULL" for _, expr in keys)
    reject = (f"CASE WHEN _kafka_key IS NULL THEN 'no key: the change has no Kafka key' "
              f"WHEN __k IS NULL OR {missing_key} THEN concat('no key: the Kafka key is not a JSON object with ', "
              f"{sql_string(', '.join(key_fields))}) "
              f"WHEN ({action}) IS NULL THEN concat('unreadable Debezium envelope: op ', coalesce({op}, 'missing'), "
              f"CASE WHEN {has_after} THEN '' ELSE ', no after' END) END")
    return Layout(cdc="debezium", keys=keys, values=values, action=action, reject=reject, key_parse=key_parse)


def normalize(raw: "DataFrame", layout: Layout) -> "DataFrame":
    """One row per change: the key and value columns, ``__action``, ``__p``/``__o`` (its Kafka
    partition and offset), ``__reject`` (NULL for a good change) and the coordinates."""
    source = raw.selectExpr("*", f"{layout.key_parse} AS __k") if layout.key_parse else raw
    coordinates = [f"{c} AS {q('__src' + c)}" if c in raw.columns else f"NULL AS {q('__src' + c)}"
                   for c in KAFKA_COLUMNS]
    # a set-aside change has no key: the rejects form one group of their own, the NULL key
    keys = [f"CASE WHEN ({layout.reject}) IS NULL THEN {expr} END AS {q(name)}" for name, expr in layout.keys]
    return source.selectExpr(
        *keys, *(f"{expr} AS {q(name)}" for name, expr in layout.values),
        f"{layout.action} AS __action", "_kafka_partition AS __p", "_kafka_offset AS __o",
        f"{layout.reject} AS __reject", *coordinates)


def rejects_of(changes: "DataFrame") -> "DataFrame":
    """The set-aside changes: their coordinates and the reason."""
    return changes.where("__reject IS NOT NULL").selectExpr(
        *(f"{q('__src' + c)} AS {c}" for c in KAFKA_COLUMNS), "__reject AS reason")


def last_change_per_key(changes: "DataFrame", layout: Layout) -> "DataFrame":
    """One row per key: its key and value columns, ``__action`` (``upsert``: insert or replace;
    ``insert``: only if the table lacks the key; ``delete``) and ``__n`` (the key's changes), the
    last change in Kafka order, with snapshot reads (``__action = 'snapshot'``) applied as a
    sequential replay applies them. The set-aside changes (:func:`normalize`) are one row whose
    key columns are NULL, ``__n`` their count: counted in the same pass, never merged."""
    keys = ", ".join(q(c) for c in layout.key_columns)
    fields = ", ".join([*(q(c) for c in layout.value_columns), "__action"])
    if layout.cdc is None:
        # no snapshot reads: the last change wins. An aggregation, not a window: a window over the
        # keys' changes ran a 2 GB driver out of heap on a first run of 10M keys, which this
        # aggregation finishes. Shuffled by key first: max_by of a struct is a sort-based
        # aggregation, whose partial step would sort before the shuffle and its final step again
        # after it; on rows already partitioned by key both steps share one sort (1M changes:
        # about 1.9 -> 1.4 s)
        last = changes.repartition(*layout.key_columns).groupBy(*layout.key_columns).agg(
            _expr(f"max_by(struct({fields}), struct(__p, __o)) AS __last"), _expr("count(1) AS __n"))
        return last.selectExpr(*(q(c) for c in layout.key_columns), "__last.*", "__n")
    pos = "struct(__p, __o)"
    live = f"CASE WHEN __action <> 'snapshot' THEN {pos} END"
    window = f"OVER (PARTITION BY {keys})"
    ranked = changes.selectExpr("*", f"max({live}) {window} AS __ll", f"max_by(__action, {live}) {window} AS __lla",
                                f"count(1) {window} AS __n")
    # 0: a snapshot read after the key's last live change, a delete: the key is absent there, the read inserts it;
    # 1: the last live change; 2: a snapshot read of a key without live changes: inserted if absent.
    # Per key the smallest class wins, the earliest of its reads (later reads find the key present).
    classed = ranked.selectExpr(
        *(q(c) for c in layout.key_columns), *(q(c) for c in layout.value_columns), "__p", "__o", "__n",
        f"CASE WHEN __reject IS NOT NULL THEN 3 WHEN __action <> 'snapshot' THEN (CASE WHEN {pos} = __ll THEN 1 END) "
        f"WHEN __ll IS NULL THEN 2 WHEN {pos} > __ll AND __lla = 'delete' THEN 0 END AS __class",
        "CASE WHEN __action <> 'snapshot' THEN __action WHEN __ll IS NULL THEN 'insert' ELSE 'upsert' END AS __action"
    ).where("__class IS NOT NULL")
    last = classed.groupBy(*layout.key_columns).agg(
        _expr(f"min_by(struct({fields}), struct(__class, __p, __o)) AS __last"), _expr("max(__n) AS __n"))
    return last.selectExpr(*(q(c) for c in layout.key_columns), "__last.*", "__n")


def _expr(text: str) -> Any:
    from pyspark.sql import functions as F

    return F.expr(text)

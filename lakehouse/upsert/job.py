"""The ``upsert`` job: merge every change a changelog table gained since the last run into the keyed table.

One run:

1. reads the keyed table's bookmark (:mod:`lakehouse.upsert.history`) and the changelog's current
   snapshot; nothing new, nothing to do;
2. reads the changes in between (Iceberg's incremental append scan; the whole changelog on the
   first run), sets aside those without a key or with an unreadable envelope, and keeps the last
   change per key (:mod:`lakehouse.upsert.changes`), computed once;
3. writes the set-aside changes to the rejects table (each once, by its coordinates);
4. commits the merge and the bookmark in one commit (:mod:`lakehouse.upsert.commit`); when
   another run committed first, plans again from its bookmark (once).

Example::

    report = run_upsert(spark, UpsertOptions(source="lake.db.devices_changelog", table="lake.db.devices"))
    print(report.summary_line())
"""

from __future__ import annotations

import logging
import re
import time
from typing import TYPE_CHECKING, Callable

from lakehouse.fault_injection import pause_point
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.identifiers import quote_identifier, split_multipart
from lakehouse.spark_sql import read_table_properties
from lakehouse.upsert.changes import (Layout, debezium_layout, key_fields_of, last_change_per_key, normalize,
                                      plain_layout, rejects_of)
from lakehouse.upsert.commit import (ConcurrentRunError, create_table, evolve_schema, merge_and_publish,
                                     table_properties, write_rejects)
from lakehouse.upsert.history import TableState, read_state, source_head
from lakehouse.upsert.options import BOOKMARK_PROPERTY, SOURCE_PROPERTY, UpsertOptions, UpsertReport

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lakehouse.upsert")

__all__ = ("CONCURRENT_RETRIES", "in_memory_limit", "run_upsert")

#: how many times a run plans again after another run committed to the table first
CONCURRENT_RETRIES = 1
#: increments up to this many rows per GiB of driver memory are checkpointed in memory, larger ones
#: on local disk: a 2 GB local driver (the jobs' default) keeps 500,000 in memory, well below what
#: ran it near its heap (10M rows of 2 partitions unrolled into the memory store ran out); the
#: reference bench's 6 GB driver keeps its 1M changes in memory (no serialization, no second read)
IN_MEMORY_CHANGES_PER_GIB = 250_000
#: the changed keys of an increment kept in memory are broadcast to the delete's semi join when
#: Spark estimates them at most this size (at most 1.5M keys at 6 GB: well under it)
BROADCAST_KEYS_BYTES = 256 * 2**20
#: when the driver's memory cannot be read (a Spark Connect server that does not expose it)
IN_MEMORY_CHANGES = 500_000
_KEY_SAMPLE = 50


def _gib(size: str) -> float | None:
    """A JVM memory size (``2g``, ``512m``, ``6144M``) in GiB; None when it does not read."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)b?\s*", size.lower())
    if match is None:
        return None
    scale = {"": 1 / 2**30, "k": 1 / 2**20, "m": 1 / 2**10, "g": 1.0, "t": 2.0**10}[match.group(2)]
    return float(match.group(1)) * scale


def in_memory_limit(driver_memory: str | None) -> int:
    """How many changes a run keeps in memory rather than on disk, from ``spark.driver.memory``
    (in local mode the driver is the only executor: its heap holds the checkpoint).

    >>> in_memory_limit("2g"), in_memory_limit("6g"), in_memory_limit("512m"), in_memory_limit(None)
    (500000, 1500000, 125000, 500000)
    """
    gib = _gib(driver_memory) if driver_memory else None
    return IN_MEMORY_CHANGES if gib is None else int(gib * IN_MEMORY_CHANGES_PER_GIB)


def _driver_memory(spark: "SparkSession") -> str | None:
    try:
        return spark.conf.get("spark.driver.memory", None)
    except Exception:  # noqa: BLE001 - a conf the server does not expose (Spark Connect)
        return None


def _table(spark: "SparkSession", name: str, default_catalog: str | None) -> IcebergTable:
    if len(split_multipart(name)) == 2 and default_catalog:
        name = f"{default_catalog}.{name}"
    return IcebergTable(spark, name)


def run_upsert(spark: "SparkSession", options: UpsertOptions,
               progress: Callable[[str], None] | None = None) -> UpsertReport:
    """Merge the changes of ``options.source`` into ``options.table``; returns the report.

    Raises :class:`ConcurrentRunError` when other runs kept committing first."""
    say = progress or log.info
    for attempt in range(CONCURRENT_RETRIES + 1):
        try:
            report = _run_once(spark, options, say)
            report.retried = attempt > 0
            return report
        except ConcurrentRunError as error:
            if attempt == CONCURRENT_RETRIES:
                raise
            say(f"upsert: {error}; planning again from the table's new bookmark")
    raise AssertionError("unreachable")  # pragma: no cover


def _stats(summary: dict[str, str]) -> tuple[int, tuple[int, int]]:
    """(live rows, (data files, delete files)) from a snapshot summary's running totals."""
    rows = int(summary.get("total-records", 0)) - int(summary.get("total-position-deletes", 0))
    return rows, (int(summary.get("total-data-files", 0)), int(summary.get("total-delete-files", 0)))


class _Laps:
    """Adds the seconds since its last call to ``phases[name]``."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases, self.last = phases, time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.phases[name] = self.phases.get(name, 0.0) + now - self.last
        self.last = now


def _time_partitions(spark: "SparkSession", sql_name: str) -> set[str]:
    """The source's partition field names (the edge's hive columns)."""
    schema = spark.table(f"{sql_name}.partitions").schema
    if "partition" not in schema.fieldNames():
        return set()
    return set(getattr(schema["partition"].dataType, "names", []))


def _layout(spark: "SparkSession", options: UpsertOptions, raw: "DataFrame", source: IcebergTable,
            target: IcebergTable, exists: bool) -> Layout:
    if options.cdc is None:
        return plain_layout(raw.columns, _time_partitions(spark, source.sql_name), options.key_column)
    rows = raw.where("_kafka_key IS NOT NULL").selectExpr("CAST(_kafka_key AS STRING) AS k").limit(_KEY_SAMPLE).collect()
    fields, wrapped = key_fields_of(r[0] for r in rows)
    types = {f.name: f.dataType for f in raw.schema.fields}
    after = types.get("after")
    if after is None and "payload" in types and hasattr(types["payload"], "fields"):
        after = {f.name: f.dataType for f in types["payload"].fields}.get("after")
    from lakehouse.schema_evolution import spark_type_text

    key_types = {f.name: spark_type_text(f.dataType) for f in getattr(after, "fields", [])}
    if exists:
        key_types.update({f.name: spark_type_text(f.dataType) for f in spark.table(target.sql_name).schema.fields})
    return debezium_layout(raw.columns, types, fields, key_types, wrapped)


def _run_once(spark: "SparkSession", options: UpsertOptions, say: Callable[[str], None]) -> UpsertReport:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    started = time.monotonic()
    phases: dict[str, float] = {}
    lap = _Laps(phases)
    source = _table(spark, options.source, options.default_catalog)
    target = _table(spark, options.table, options.default_catalog)
    report = UpsertReport(source.identifier, target.identifier, options.merge_mode, phases=phases)
    if not source.exists():
        raise ValueError(f"source table {source.identifier} does not exist (register the changelog first)")
    exists = target.exists()
    state = read_state(spark, target.sql_name) if exists else TableState(None, None, (), {})
    if exists:
        properties = read_table_properties(spark, target.sql_name)
        report.merge_mode = properties.get("write.merge.mode", "copy-on-write")
    report.rows_before, report.files_before = _stats(state.summary)
    report.since = state.bookmark
    until, increment = source_head(spark, source.sql_name, state.bookmark)
    report.until = until if until is not None else state.bookmark
    if until is None or until == state.bookmark:
        report.rows_after, report.files_after = report.rows_before, report.files_before
        report.notes.append("nothing new")
        report.seconds = time.monotonic() - started
        return report
    if state.bookmark is None:
        raw = spark.sql(f"SELECT * FROM {source.sql_name} VERSION AS OF {int(until)}")
    else:
        raw = (spark.read.format("iceberg").option("start-snapshot-id", str(state.bookmark))
               .option("end-snapshot-id", str(until)).load(source.identifier))
    layout = _layout(spark, options, raw, source, target, exists)
    lap("bookmark")
    say(f"upsert: {source.identifier} snapshot {state.bookmark or 'start'} -> {until} into {target.identifier}")
    # computed once: the merge joins its source more than once, and the counts come from it (an
    # observation would not do: a checkpoint over Spark Connect reports none). Checkpointed, not
    # cached: Spark 4.1 fails to plan a second cached read of the same Iceberg increment in one
    # session ("No plan for TableReference"), as two tables fed from one changelog do.
    # In memory when the increment is small for the driver's heap (no serialization: 1M changes,
    # 9.0 -> 7.0 s under load, see in_memory_limit); on disk otherwise: a first run's checkpoint
    # holds every key (10M rows of 2 partitions unrolled into the memory store ran a 2 GB driver out
    # of heap). Lazy when in memory: the counts' job
    # below computes and stores it in the same pass (an eager checkpoint is a pass of its own, then
    # the counts read it all again: 1M changes, 6.0 -> 3.7 s under load)
    in_memory = increment <= in_memory_limit(_driver_memory(spark))
    level = StorageLevel.MEMORY_AND_DISK_DESER if in_memory else StorageLevel.DISK_ONLY
    large = level == StorageLevel.DISK_ONLY  # stored in a pass of its own (lazily, 10M changes ran the heap out)
    last = last_change_per_key(normalize(raw, layout), layout).localCheckpoint(eager=large, storageLevel=level)
    try:
        first_key = layout.key_columns[0]
        actions: set[str] = set()
        for row in last.groupBy(F.col(first_key).isNull().alias("rejects"), "__action").agg(
                F.count(F.lit(1)).alias("keys"), F.sum("__n").alias("changes")).collect():
            report.changes_read += int(row["changes"] or 0)
            actions.add(str(row["__action"]))
            if row["rejects"]:
                report.rejected += int(row["changes"] or 0)
            elif row["__action"] == "delete":
                report.deletes += int(row["keys"])
            else:
                report.upserts += int(row["keys"])
        report.keys_changed = report.upserts + report.deletes
        lap("changes")
        changes = last.where(f"{quote_identifier(first_key)} IS NOT NULL").drop("__n")
        if report.rejected:
            rejects = _table(spark, options.rejects_table or f"{target.identifier}_rejects", options.default_catalog)
            report.rejects_table = rejects.identifier
            write_rejects(spark, rejects.identifier, rejects.sql_name, rejects_of(normalize(raw, layout)),
                          source.identifier, until)
            say(f"upsert: {report.rejected} change(s) set aside in {rejects.identifier} (no key or unreadable)")
            lap("rejects")
        bookmark = {BOOKMARK_PROPERTY: str(until), SOURCE_PROPERTY: source.identifier}
        if not exists:
            rows = changes.where("__action <> 'delete'").drop("__action")
            create_table(spark, target.identifier, target.sql_name, rows, options.partition_by,
                         table_properties(options.merge_mode, options.format_version, layout.key_columns), bookmark)
            report.created = True
            lap("create")
        else:
            if state.main is None:
                raise ValueError(f"{target.identifier} exists but has no snapshot: drop it, or let the first run "
                                 "create it")
            evolve_schema(spark, target.sql_name, changes.drop("__action").schema, say)
            lap("schema")
            # merge-on-read without snapshot reads: every upsert replaces its key, so the rows go as a
            # delete of the changed keys and an insert (commit.merge_and_publish says why)
            replace_keys = report.merge_mode == "merge-on-read" and "insert" not in actions
            report.plan = "delete + insert" if replace_keys else "merge"
            merge_and_publish(spark, target.identifier, target.sql_name, changes, layout.key_columns, state.main,
                              bookmark, state.refs, lap, replace_keys=replace_keys,
                              broadcast_bytes=BROADCAST_KEYS_BYTES if in_memory else None)
        pause_point("upsert.after-commit")
    finally:
        last.unpersist()  # a long-lived session (a Spark Connect server) keeps nothing of the run
    after = read_state(spark, target.sql_name)
    report.rows_after, report.files_after = _stats(after.summary)
    lap("report")
    report.seconds = time.monotonic() - started
    return report


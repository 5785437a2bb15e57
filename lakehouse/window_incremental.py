"""Incremental window recompute: only the records added since the last run, only the windows they touch.

The ``windows`` job records, in the output's snapshot summary of the commit that wrote the rows
(so the bookmark and the rows can never disagree, whatever point a driver dies at):

* ``lakehouse.windows.source-snapshot``: the source snapshot the output reflects;
* ``lakehouse.windows.definition``: a fingerprint of everything the rows depend on (window spec,
  columns, order, filter). A changed definition means a full recompute.

A later run reads the records appended since (Iceberg's incremental append scan between the two
snapshot ids) and, per closing group (the key within its Kafka partition, or the partition):

* **tail groups** (every new record comes after the group's old ones in offset order, the normal
  case; what the run knows of the old records comes from the per-group window state,
  ``lakehouse.window_state``, so it reads the new files and that state only): windows already emitted cannot change (a record is never placed in a window that was
  closed when it arrived, and the emitted ones were closed at the end of the old data), so the run
  only *adds* the windows that close now. Their starts lie above ``B = E_old - grace - duration``
  (``E_old``: the group's event time at the end of the old data), so only records with
  ``ts > B`` are read, and windows up to ``B`` count as closed (``__closed_floor``). Older
  records cannot make one of these windows late, their timestamps being ``<= B``.
* **replaced keys** (a new record sits between old ones in offset order, or sliding windows, or
  the Python-engine path): every window of the key is recomputed from the table at the new
  snapshot and replaces the key's rows.

Both go to the output in one ``MERGE`` (delete the replaced keys' rows, insert the new rows)
whose snapshot carries the new bookmark. The run falls back to a full recompute (create or
replace, bookmark included) when there is no usable bookmark: first run, ``--full``, a Delta
source or output, a changed definition, a source snapshot that is gone (expired) or not an
ancestor of the current one, or a non-append change in between (delete, overwrite), since those
can remove records the output was built from. Compaction (``replace`` snapshots) keeps the
records and does not force a full run.

Example::

    plan = plan_increment(spark, options, source, target)   # None: run a full recompute
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from lakehouse.fault_injection import pause_point

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.iceberg_tables import IcebergTable
    from lakehouse.window_recompute import WindowRecomputeOptions

log = logging.getLogger("lakehouse.windows")

SOURCE_SNAPSHOT_PROPERTY = "lakehouse.windows.source-snapshot"
DEFINITION_PROPERTY = "lakehouse.windows.definition"
#: snapshot operations between the bookmark and now that keep every record the output was built from
KEEPS_RECORDS = ("append", "replace")


def definition_fingerprint(options: "WindowRecomputeOptions") -> str:
    """A short hash of everything the output rows depend on, besides the source's records."""
    spec = options.window
    parts = {
        "table": options.table, "value": options.value_column, "key": options.key_column,
        "ts": options.timestamp_column, "order": list(options.order_by), "partition": options.partition_column,
        "where": options.where, "kind": spec.kind, "duration": spec.duration_ms, "grace": spec.grace_ms,
        "step": spec.step_ms, "aggregation": spec.aggregation_name, "closing": spec.closing,
        "value_type": spec.value_type,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def bookmark_properties(snapshot_id: int | None, fingerprint: str) -> dict[str, str]:
    """The snapshot summary entries a run writes with its output commit."""
    if snapshot_id is None:
        return {}
    return {SOURCE_SNAPSHOT_PROPERTY: str(snapshot_id), DEFINITION_PROPERTY: fingerprint}


def current_snapshot_id(table: "IcebergTable") -> int | None:
    snapshot = table.java_table().currentSnapshot()
    return None if snapshot is None else int(snapshot.snapshotId())


def read_bookmark(target: "IcebergTable") -> tuple[int, str] | None:
    """(source snapshot id, definition fingerprint) recorded by the output's current snapshot."""
    snapshot = target.java_table().currentSnapshot()
    if snapshot is None:
        return None
    summary = snapshot.summary()
    recorded, definition = summary.get(SOURCE_SNAPSHOT_PROPERTY), summary.get(DEFINITION_PROPERTY)
    if recorded is None or definition is None:
        return None
    return int(recorded), str(definition)


def _changes_since(source: "IcebergTable", since: int, until: int) -> str | None:
    """None when ``since`` is an ancestor of ``until`` and every snapshot after it only added
    records (or compacted them); else why an incremental run cannot start from ``since``."""
    table = source.java_table()
    snapshot = table.snapshot(until)
    operations = []
    while snapshot is not None and int(snapshot.snapshotId()) != since:
        operations.append(str(snapshot.operation()))
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    if snapshot is None:
        return f"the recorded source snapshot {since} is not an ancestor of the current one (expired or rolled back)"
    changed = sorted({op for op in operations if op not in KEEPS_RECORDS})
    if changed:
        return f"the source had {', '.join(changed)} commits since snapshot {since}"
    return None


@dataclass
class IncrementPlan:
    """What an incremental run reads: the source snapshots it spans."""

    since: int
    until: int


def plan_increment(options: "WindowRecomputeOptions", source: Any, target: Any,
                   say: Callable[[str], None]) -> IncrementPlan | None:
    """The increment to run, or None for a full recompute (the reason is said)."""
    if getattr(options, "full", False):
        say("windows: full recompute (--full)")
        return None
    if source.table_format != "iceberg" or target.table_format != "iceberg":
        say("windows: full recompute (incremental runs need an Iceberg source and output)")
        return None
    if not target.exists():
        return None
    bookmark = read_bookmark(target)
    if bookmark is None:
        say(f"windows: full recompute ({options.output} records no source snapshot)")
        return None
    since, definition = bookmark
    if definition != definition_fingerprint(options):
        say("windows: full recompute (the window definition changed since the last run)")
        return None
    until = current_snapshot_id(source)
    if until is None:
        return None
    problem = None if until == since else _changes_since(source, since, until)
    if problem:
        say(f"windows: full recompute ({problem})")
        return None
    return IncrementPlan(since, until)


def source_at(spark: "SparkSession", sql_name: str, snapshot_id: int | None) -> "DataFrame":
    """The source table as of ``snapshot_id`` (its current state when None)."""
    if snapshot_id is None:
        return spark.table(sql_name)
    return spark.sql(f"SELECT * FROM {sql_name} VERSION AS OF {int(snapshot_id)}")


def appended_between(spark: "SparkSession", identifier: str, since: int, until: int) -> "DataFrame":
    """The records added by the append snapshots after ``since`` up to ``until``."""
    return (spark.read.format("iceberg").option("start-snapshot-id", str(since))
            .option("end-snapshot-id", str(until)).load(identifier))


def split_groups(old: "DataFrame", new: "DataFrame", group_cols: list[str], order_cols: list[str],
                 bound_below: int) -> "DataFrame":
    """One row per group with new records: the group's columns, ``__tail`` (its new records all
    follow its old ones in offset order) and ``__closed_floor`` (``E_old - bound_below``, the
    largest window start emitted from the old records; NULL without old records)."""
    from pyspark.sql import functions as F

    old_stats = old.groupBy(*group_cols).agg(F.greatest(F.lit(0).cast("long"), F.max("ts")).alias("__old_latest"),
                                             F.max(F.struct(*order_cols)).alias("__old_last"))
    return split_groups_by_stats(old_stats, new, group_cols, order_cols, bound_below)


def split_groups_by_stats(old_stats: "DataFrame", new: "DataFrame", group_cols: list[str], order_cols: list[str],
                          bound_below: int) -> "DataFrame":
    """:func:`split_groups` from the old records' per-group ``__old_latest``/``__old_last`` (the
    window state) instead of the old records themselves."""
    from pyspark.sql import functions as F

    new_stats = new.groupBy(*group_cols).agg(F.min(F.struct(*order_cols)).alias("__new_first"))
    joined = new_stats.join(old_stats, on=group_cols, how="left")
    tail = F.col("__old_last").isNull() | (F.col("__new_first") > F.col("__old_last"))
    return joined.select(*group_cols, tail.alias("__tail"),
                         (F.col("__old_latest") - bound_below).alias("__closed_floor"))


def run_increment(spark: "SparkSession", options: "WindowRecomputeOptions", plan: IncrementPlan, source: Any,
                  target: Any, say: Callable[[str], None]) -> tuple[int, int, str] | None:
    """Bring ``options.output`` from ``plan.since`` to ``plan.until``: (new records read, window
    rows inserted, the path's description), or None when only a full recompute can (a Kafka
    partition closing its windows got records between old ones)."""
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import (_extra_columns, _value_type, choose_path, compute_windows,
                                            group_columns, prepare_input)

    if plan.since == plan.until:
        return 0, 0, "incremental (no new source snapshot)"
    from lakehouse.window_state import build_state, read_state, state_records, write_state

    spec = options.window
    fingerprint = definition_fingerprint(options)
    bound = spec.grace_ms + spec.duration_ms
    complete = F.col("ts").isNotNull() & F.col("value").isNotNull()
    # read only when keys must be recomputed whole (records between old ones, sliding windows)
    everything = prepare_input(source_at(spark, source.sql_name, plan.until), options).where(complete)
    new = prepare_input(appended_between(spark, source.identifier, plan.since, plan.until), options)
    new_rows = new.count()  # reads the appended files only
    new = new.where(complete)
    order_cols = [f"__order_{i}" for i in range(len(options.order_by))]
    group_cols = group_columns(options, _extra_columns(options, spark.table(source.sql_name).columns))
    path = choose_path(spec, options.engine)
    value_type = _value_type(everything.schema["value"].dataType, spec.aggregation, spec.value_type)
    state = read_state(spark, options, plan.since, fingerprint)
    if state is None:  # no state for this bookmark: rebuild it from the old snapshot (a full scan)
        say(f"windows: rebuilding the per-group window state from source snapshot {plan.since}")
        old = prepare_input(source_at(spark, source.sql_name, plan.since), options).where(complete)
        state = build_state(old, group_cols, order_cols, bound)
    state = state.cache()  # one row per group: small, read several times (kept by the first job reading it)
    old_stats = state.select(*group_cols, F.col("latest").alias("__old_latest"), F.col("last").alias("__old_last"))
    recent = state_records(state).unionByName(new)  # every record a window closing from now on can hold
    groups = split_groups_by_stats(old_stats, new, group_cols, order_cols, bound).cache()
    try:
        appendable = path == "native" and spec.kind != "sliding"
        if "key" not in group_cols:  # closing per partition: a reordered partition means a full run
            if groups.where(~F.col("__tail")).limit(1).count():
                say("windows: full recompute (a partition got records between its old ones)")
                return None
            replace_keys = spark.createDataFrame([], everything.select("key").schema) if appendable else \
                everything.join(groups.select(*group_cols), on=group_cols, how="left_semi").select("key").distinct()
        else:
            replace_keys = (groups.where(~F.col("__tail") | F.lit(not appendable)).select("key").distinct())
        tail = groups.where("__tail").join(replace_keys, on="key", how="left_anti") if "key" in group_cols \
            else groups
        replacing = replace_keys.count()
        inserted = []
        if appendable:
            # a tail group's new windows start above its closed floor: they hold only records with
            # ts > floor, all of them in the state (old ones) or in the new files
            tail_records = recent.join(tail.select(*group_cols, "__closed_floor"), on=group_cols)
            tail_records = tail_records.where(F.col("__closed_floor").isNull() | (F.col("ts") > F.col("__closed_floor")))
            rows, _ = compute_windows(tail_records, spec, order_cols, group_cols, value_type, path)
            inserted.append(rows)
        if replacing:
            replaced = everything.join(replace_keys, on="key", how="left_semi")
            rows, note = compute_windows(replaced, spec, order_cols, group_cols, value_type, path)
            inserted.append(rows)
        properties = bookmark_properties(plan.until, fingerprint)
        if replacing:
            written = merge_windows(spark, target, inserted, replace_keys, properties)
        else:
            written = append_windows(target, inserted, properties)
        # after the output commit: a crash in between leaves a state the next run does not trust
        write_state(build_state(recent, group_cols, order_cols, bound, prior=state), options, plan.until, fingerprint)
        return new_rows, written, f"incremental, {path}" + (f", {replacing} keys recomputed" if replacing else "")
    finally:
        groups.unpersist()
        state.unpersist()


def append_windows(target: Any, inserted: list["DataFrame"], properties: dict[str, str]) -> int:
    """Append ``inserted`` to ``target`` in one commit carrying ``properties``; returns the rows."""
    from functools import reduce

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import OUTPUT_COLUMNS

    rows = reduce(lambda a, b: a.unionByName(b), [df.select(*OUTPUT_COLUMNS) for df in inserted])
    counted = Observation(f"windows_appended_{uuid.uuid4().hex}")
    writer = rows.observe(counted, F.count(F.lit(1)).alias("rows")).writeTo(target.sql_name)
    for key, value in properties.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    pause_point("windows.before-commit")
    writer.append()
    return int(counted.get["rows"] or 0)


def merge_windows(spark: "SparkSession", target: Any, inserted: list["DataFrame"], replace_keys: "DataFrame",
                  properties: dict[str, str]) -> int:
    """One ``MERGE`` into ``target``: delete every row of ``replace_keys``, insert ``inserted``;
    its snapshot carries ``properties``. Returns the number of rows inserted."""
    from functools import reduce

    from pyspark.sql import functions as F

    from lakehouse.window_recompute import OUTPUT_COLUMNS

    rows = reduce(lambda a, b: a.unionByName(b), [df.select(*OUTPUT_COLUMNS) for df in inserted])
    rows = rows.withColumn("__op", F.lit("insert"))
    deletes = replace_keys.select("key", *[F.lit(None).cast(rows.schema[c].dataType).alias(c)
                                          for c in OUTPUT_COLUMNS[1:]], F.lit("delete").alias("__op"))
    # computed once, before the MERGE reads them (it joins its source more than once); an
    # increment's changes are the new windows and the replaced keys' rows: small
    changes = rows.unionByName(deletes).localCheckpoint(eager=True)
    inserted_rows = changes.where("__op = 'insert'").count()
    view = f"windows_changes_{uuid.uuid4().hex}"
    changes.createOrReplaceTempView(view)
    conf_keys = [f"spark.sql.iceberg.snapshot-property.{k}" for k in properties]
    for key, value in zip(conf_keys, properties.values()):
        spark.conf.set(key, value)
    pause_point("windows.before-commit")
    try:
        spark.sql(f"""
            MERGE INTO {target.sql_name} t USING {view} s
            ON s.__op = 'delete' AND t.key = s.key
            WHEN MATCHED THEN DELETE
            WHEN NOT MATCHED AND s.__op = 'insert' THEN
                INSERT (key, window_start, window_end, value) VALUES (s.key, s.window_start, s.window_end, s.value)
        """)
    finally:
        for key in conf_keys:
            spark.conf.unset(key)
        spark.catalog.dropTempView(view)
    return inserted_rows

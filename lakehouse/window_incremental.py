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

The tail groups' new windows are appended first (:mod:`lakehouse.window_tail`), the bookmark
in a metadata-only commit after them once the write's observation shows no reordered group;
otherwise one ``MERGE`` (delete the replaced keys' rows, insert their recomputed rows) carries
the bookmark. An output left without a bookmark (a driver lost between the two commits) gets a
full recompute. The run falls back to a full recompute (create or
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from lakehouse.window_commits import commit_windows

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.iceberg_tables import IcebergTable
    from lakehouse.window_recompute import WindowRecomputeOptions

log = logging.getLogger("lakehouse.windows")

SOURCE_SNAPSHOT_PROPERTY = "lakehouse.windows.source-snapshot"
DEFINITION_PROPERTY = "lakehouse.windows.definition"
#: snapshot operations between the bookmark and now that keep every record the output was built from
KEEPS_RECORDS = ("append", "replace")
#: a prepared row the windows use (the others are counted and skipped), as SQL text
COMPLETE = "ts IS NOT NULL AND value IS NOT NULL"


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


def _changes_since(table: Any, since: int, until: int) -> tuple[str | None, int | None]:
    """(None when ``since`` is an ancestor of ``until`` in ``table`` (the source's Java table) and
    every snapshot after it only added records (or compacted them), else why an incremental run
    cannot start from ``since``; the records the appends in between added, None when a summary
    does not say)."""
    snapshot = table.snapshot(until)
    operations = []
    added: int | None = 0
    while snapshot is not None and int(snapshot.snapshotId()) != since:
        operation = str(snapshot.operation())
        operations.append(operation)
        if operation == "append":
            count = snapshot.summary().get("added-records")
            added = None if added is None or count is None else added + int(count)
        parent = snapshot.parentId()
        snapshot = None if parent is None else table.snapshot(parent)
    if snapshot is None:
        return (f"the recorded source snapshot {since} is not an ancestor of the current one (expired or rolled back)",
                None)
    changed = sorted({op for op in operations if op not in KEEPS_RECORDS})
    if changed:
        return f"the source had {', '.join(changed)} commits since snapshot {since}", None
    return None, added


def uses_state(spec: Any, path: str, group_cols: list[str]) -> bool:
    """Whether incremental runs read the per-group window state (``lakehouse.window_state``), so
    a full run must write it: to add the windows of tail groups (native tumbling and hopping), or
    to find the partitions that got records between old ones (closing per partition). Otherwise
    (sliding windows, the Python-engine path, per key) an increment recomputes every changed key
    from the table, and the state would be written for nothing."""
    return (path == "native" and spec.kind != "sliding") or "key" not in group_cols


@dataclass
class IncrementPlan:
    """What an incremental run reads: the source snapshots it spans."""

    since: int
    until: int
    added_records: int | None = None  # what the appends in between added (their snapshot summaries)


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
    table = source.java_table()  # loaded once for the current snapshot and the walk back to ``since``
    current = table.currentSnapshot()
    if current is None:
        return None
    until = int(current.snapshotId())
    problem, added = (None, 0) if until == since else _changes_since(table, since, until)
    if problem:
        say(f"windows: full recompute ({problem})")
        return None
    return IncrementPlan(since, until, added)


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
    largest window start emitted from the old records; NULL without old records). The old
    records' per-group stats are what the window state keeps; :func:`group_changes` does the rest."""
    from pyspark.sql import functions as F

    old_stats = old.groupBy(*group_cols).agg(F.greatest(F.lit(0).cast("long"), F.max("ts")).alias("__old_latest"),
                                             F.max(F.struct(*order_cols)).alias("__old_last"))
    changes = group_changes(old_stats, new, F.lit(True), group_cols, order_cols, bound_below)
    return changes.select(*group_cols, "__tail", "__closed_floor")


def group_changes(old_stats: "DataFrame | None", new: "DataFrame", complete: Any, group_cols: list[str],
                  order_cols: list[str], bound_below: int) -> "DataFrame":
    """Per group with new rows, from the old records' per-group ``__old_latest``/``__old_last``
    (the window state): ``__tail`` and ``__closed_floor`` as :func:`split_groups` describes them,
    over every prepared new row, ``complete`` or not, plus ``__new_rows`` (the group's new rows, counted so that the run needs no ``count()`` job of its
    own) and ``__has_new`` (the group got a complete record: only those can change windows)."""
    from pyspark.sql import functions as F

    new_stats = new.groupBy(*group_cols).agg(F.count(F.lit(1)).alias("__new_rows"),
                                             F.min(F.when(complete, F.struct(*order_cols))).alias("__new_first"))
    if old_stats is None:  # no state read: every group counts as a tail with no closed floor
        joined = new_stats.select("*", F.lit(None).cast("long").alias("__old_latest"),
                                  F.lit(None).cast(new_stats.schema["__new_first"].dataType).alias("__old_last"))
    else:
        joined = new_stats.join(old_stats, on=group_cols, how="left")
    tail = F.col("__old_last").isNull() | (F.col("__new_first") > F.col("__old_last"))
    return joined.select(*group_cols, "__new_rows", F.col("__new_first").isNotNull().alias("__has_new"),
                         F.coalesce(tail, F.lit(True)).alias("__tail"),
                         (F.col("__old_latest") - bound_below).alias("__closed_floor"))


@dataclass
class GroupSummary:
    """What the driver must know before it picks a plan, from one small Spark job."""

    new_rows: int  # new rows read (NULL timestamps/values included, as ``new.count()`` would)
    changed: int  # groups that got complete records
    reordered: int  # of those, the groups whose new records sit between old ones
    replaced_keys: int  # keys recomputed whole (reordered ones, or every changed key when appending is not
    # possible); per-key closing only (per partition they are known after a scan of the table)


def summarize_groups(groups: "DataFrame", group_cols: list[str], appendable: bool) -> GroupSummary:
    """One aggregation over the (cached, one row per group) :func:`group_changes`, collected as one
    row: replaces the separate ``count()`` jobs of the new rows, of the reordered groups and of
    the replaced keys."""
    from pyspark.sql import functions as F

    changed = F.col("__has_new")
    reordered = changed & ~F.col("__tail")
    columns = [F.sum("__new_rows").alias("rows"), F.count(F.when(changed, 1)).alias("changed"),
               F.count(F.when(reordered, 1)).alias("reordered")]
    if "key" in group_cols:
        columns.append(F.count_distinct(F.when(reordered if appendable else changed, F.col("key"))).alias("replaced"))
    row = groups.agg(*columns).first()
    assert row is not None  # a global aggregation has one row
    return GroupSummary(int(row["rows"] or 0), int(row["changed"]), int(row["reordered"]),
                        int(row["replaced"]) if "key" in group_cols else 0)


def run_increment(spark: "SparkSession", options: "WindowRecomputeOptions", plan: IncrementPlan, source: Any,
                  target: Any, say: Callable[[str], None]) -> tuple[int, int, str] | None:
    """Bring ``options.output`` from ``plan.since`` to ``plan.until``: (new records read, window
    rows inserted, the path's description), or None when only a full recompute can (a Kafka
    partition closing its windows got records between old ones).

    The fixed cost is what an increment pays on any table size, so for tumbling and hopping
    windows it is two Spark actions, running side by side: the windows' append (followed by the
    bookmark's metadata-only commit) and, in a thread of its own, the state's overwrite (it
    depends on the old state and the new records only)."""
    from concurrent.futures import ThreadPoolExecutor, wait

    from pyspark.sql import functions as F

    from lakehouse.window_recompute import _extra_columns, choose_path, group_columns, prepare_input
    from lakehouse.window_tail import loop_gathers, loop_increment

    if plan.since == plan.until:
        return 0, 0, "incremental (no new source snapshot)"
    bound = options.window.grace_ms + options.window.duration_ms
    complete = F.expr(COMPLETE)
    appended = appended_between(spark, source.identifier, plan.since, plan.until)
    arrived = prepare_input(appended, options)  # reads the appended files only
    order_cols = [f"__order_{i}" for i in range(len(options.order_by))]
    group_cols = group_columns(options, _extra_columns(options, appended.columns))
    fingerprint = definition_fingerprint(options)
    if not uses_state(options.window, choose_path(options.window, options.engine), group_cols):
        return _emit_windows(spark, options, plan, source, target, say, None, arrived, group_cols, order_cols,
                             complete)
    state, trusted = _open_state(spark, options, plan, source, group_cols, order_cols, bound, fingerprint, say)
    new = arrived.where(complete)
    gathered = loop_gathers(options, arrived, group_cols, order_cols, bound) if trusted else None
    if gathered is not None:  # one job: the windows, and the state after the new rows, from one loop
        return loop_increment(spark, options, plan, source, target, say, state, arrived, group_cols, order_cols,
                              complete, gathered)
    state = state.cache()  # one row per group: small, read by every job of the run (kept by the first)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="window-state") as pool:
        # the state at plan.until is right whatever the output's fate: a run that ends without
        # its output commit leaves a state the next run does not trust (its bookmark differs from
        # the output's) and rebuilds; a full recompute (None below) replaces it
        saving = pool.submit(_save_state, state, new, options, group_cols, order_cols, plan.until, fingerprint,
                             trusted)
        try:
            result = _emit_windows(spark, options, plan, source, target, say, state, arrived, group_cols,
                                   order_cols, complete)
        except BaseException:
            wait([saving])  # no job left running; the output's error is the one to report
            state.unpersist()
            raise
        saving.result()  # the state write's own error, if any
    state.unpersist()
    return result


def _save_state(state: "DataFrame", new: "DataFrame", options: "WindowRecomputeOptions", group_cols: list[str],
                order_cols: list[str], until: int, fingerprint: str, trusted: bool) -> None:
    """Write the state after ``new``: an overwrite of the table the state was read from (same
    columns), a create-or-replace when it was rebuilt."""
    from lakehouse.window_state import advance_state, write_state

    spec = options.window
    advanced = advance_state(state, new, group_cols, order_cols, spec.grace_ms + spec.duration_ms)
    overwrite = trusted and advanced.schema.simpleString() == state.schema.simpleString()
    write_state(advanced, options, until, fingerprint, overwrite=overwrite)


def _emit_windows(spark: "SparkSession", options: "WindowRecomputeOptions", plan: IncrementPlan, source: Any,
                  target: Any, say: Callable[[str], None], state: "DataFrame | None", arrived: "DataFrame",
                  group_cols: list[str], order_cols: list[str], complete: Any,
                  gathered: Any = None, computed_hook: Callable[[], None] | None = None) -> tuple[int, int, str] | None:
    """The output's part of :func:`run_increment`. Native tumbling and hopping windows append the
    tail groups' new windows first (:func:`lakehouse.window_tail.append_tail`: no job before the
    write) and record the bookmark in a commit of its own when no group was reordered, the normal
    case; otherwise, and on the other paths, one summary row decides which keys are recomputed
    whole, and one ``MERGE`` replaces their rows and records the bookmark. ``state`` is None when
    the path does not use it (:func:`uses_state`): every changed key is recomputed, so whether its
    new records follow its old ones does not matter. ``gathered``: the JVM loop appends the tail
    windows and gathers the state (:func:`lakehouse.window_tail.append_tail`: then the append
    carries the bookmark); ``computed_hook`` runs once the tail windows are computed (the state's
    write starts there)."""
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import _commit_properties, _value_type, choose_path, prepare_input
    from lakehouse.window_tail import append_tail

    spec = options.window
    new = arrived.where(complete)
    path = choose_path(spec, options.engine)
    appendable = path == "native" and spec.kind != "sliding"
    value_type = _value_type(new.schema["value"].dataType, spec.aggregation, spec.value_type)
    bookmark = bookmark_properties(plan.until, definition_fingerprint(options))
    appended = 0
    if appendable:
        assert state is not None
        new_rows, appended, reordered, bookmarked = append_tail(target, state, arrived, COMPLETE, spec, group_cols,
                                                                order_cols, value_type, path, gathered, bookmark,
                                                                computed_hook)
        if not reordered:
            if not bookmarked:
                _commit_properties(target, bookmark)
            loop = "" if gathered is None else " (JVM loop, one task)" if gathered.one_task else " (JVM loop)"
            return new_rows, appended, f"incremental, {path}{loop}"
        if "key" not in group_cols:  # closing per partition: a full run
            say("windows: full recompute (a partition got records between its old ones)")
            return None
    old_stats = None if state is None else state.select(*group_cols, F.col("latest").alias("__old_latest"),
                                                        F.col("last").alias("__old_last"))
    bound = spec.grace_ms + spec.duration_ms
    groups = group_changes(old_stats, arrived, complete, group_cols, order_cols, bound).cache()
    try:
        summary = summarize_groups(groups, group_cols, appendable)
        if "key" not in group_cols and summary.reordered:  # closing per partition: a full run
            say("windows: full recompute (a partition got records between its old ones)")
            return None
        changed = groups.where("__has_new")
        replace_keys = _replace_keys(spark, options, plan, source, changed, group_cols, appendable, complete, summary)
        inserted = []
        if replace_keys is not None:
            everything = prepare_input(source_at(spark, source.sql_name, plan.until), options).where(complete)
            inserted.append(compute_windows_of(everything.join(replace_keys, on="key", how="left_semi"), spec,
                                               order_cols, group_cols, value_type, path, options.loop))
        written = commit_windows(spark, target, inserted, replace_keys, bookmark)
        return (summary.new_rows, appended + written,
                f"incremental, {path}" + _replaced_note(summary, replace_keys, group_cols))
    finally:
        groups.unpersist()




def _replaced_note(summary: GroupSummary, replace_keys: "DataFrame | None", group_cols: list[str]) -> str:
    """The path's note on what was recomputed whole ("" when nothing was)."""
    if replace_keys is None:
        return ""
    if "key" in group_cols:
        return f", {summary.replaced_keys} keys recomputed"
    return f", the keys of {summary.changed} partitions recomputed"


def _open_state(spark: "SparkSession", options: "WindowRecomputeOptions", plan: IncrementPlan, source: Any,
                group_cols: list[str], order_cols: list[str], bound: int, fingerprint: str,
                say: Callable[[str], None]) -> tuple["DataFrame", bool]:
    """The window state at ``plan.since`` and whether it came from the state table (else it is
    rebuilt from the old snapshot, a full scan, and the table is replaced rather than overwritten)."""
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import prepare_input
    from lakehouse.window_state import build_state, read_state

    state = read_state(spark, options, plan.since, fingerprint)
    if state is not None:
        return state, True
    say(f"windows: rebuilding the per-group window state from source snapshot {plan.since}")
    complete = F.col("ts").isNotNull() & F.col("value").isNotNull()
    old = prepare_input(source_at(spark, source.sql_name, plan.since), options).where(complete)
    return build_state(old, group_cols, order_cols, bound), False


def _replace_keys(spark: "SparkSession", options: "WindowRecomputeOptions", plan: IncrementPlan, source: Any,
                  changed: "DataFrame", group_cols: list[str], appendable: bool, complete: Any,
                  summary: GroupSummary) -> "DataFrame | None":
    """The keys whose windows are recomputed whole (None when there are none, the normal case,
    known from ``summary`` without a job): with per-key closing the reordered groups' keys (every
    changed key when appending is not possible); per partition (only when appending is not
    possible), every key of a changed partition, which takes a scan of the table."""
    from pyspark.sql import functions as F

    from lakehouse.window_recompute import prepare_input

    if "key" in group_cols:
        if not summary.replaced_keys:
            return None
        return changed.where(~F.col("__tail") | F.lit(not appendable)).select("key").distinct()
    if appendable or not summary.changed:
        return None
    everything = prepare_input(source_at(spark, source.sql_name, plan.until), options).where(complete)
    return everything.join(changed.select(*group_cols), on=group_cols, how="left_semi").select("key").distinct()


def compute_windows_of(data: "DataFrame", spec: Any, order_cols: list[str], group_cols: list[str], value_type: Any,
                       path: str, loop: str = "auto") -> "DataFrame":
    """The window rows of ``data`` (:func:`lakehouse.window_recompute.compute_windows`, its note dropped).

    Native tumbling and hopping windows are planned without the full run's observations (the
    group count and what the window state needs: two more frames and ~250 round trips to the
    JVM while the plan is built, for figures an increment never reads)."""
    from pyspark.sql import functions as F

    from lakehouse.window_loop import loop_unavailable_reason, loop_windows
    from lakehouse.window_native import native_fixed_windows
    from lakehouse.window_recompute import compute_windows

    if path == "native" and spec.kind != "sliding":
        if loop_unavailable_reason(data, loop) is None:  # the tail's records are observed: operators
            rows = loop_windows(data, spec, order_cols, group_cols)
        else:
            rows = native_fixed_windows(data, spec, order_cols, group_cols)
        return rows.withColumn("value", F.col("value").cast(value_type))
    return compute_windows(data, spec, order_cols, group_cols, value_type, path, loop)[0]




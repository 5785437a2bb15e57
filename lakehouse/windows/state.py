"""Per-group window state of incremental runs: what a run needs from the records it already saw.

An incremental run (:mod:`lakehouse.windows.incremental`) needs, per closing group (the key within its
Kafka partition, or the partition):

* ``latest``: the group's event time at the end of the old data (``E_old``, the edge's window
  clock), and ``last``: its last record in the reading order (to tell a tail group from one whose
  new records sit between old ones);
* ``records``: the old records still able to fall into a window that closes later, those with
  ``ts > latest - grace - duration`` (the records of the group's open windows; sliding windows
  ``ts >= latest - grace - duration``: ``WindowSpec.closing_lag_ms``);
* sliding windows, ``replayed``: the group's windows are not all of the closed form (the edge's
  engines computed them, or an increment recomputed its key whole), so an increment recomputes
  its key whole when it gets records; the other groups take the tail.

Reading those from the old snapshot means scanning every record ever written, so a run would cost
as much as a full recompute. Instead the job keeps them in a small Iceberg table next to the
output, ``<output>__window_state``: one row per group, its open windows' records in an array. Each
run rewrites it, from the old state and the new records only (records older than
``latest - grace - duration`` can never be needed again: ``latest`` only grows), in a job that
runs alongside the output's (neither commit waits for the other: whichever lands first, a run
that does not land both leaves a state whose bookmark differs from the output's).

The state table carries the source snapshot and the window definition it reflects in the
snapshot summary of the commit that wrote its rows (as the output does its bookmark), so an
incremental run replaces the rows with a plain ``overwrite`` (one commit, no table metadata
rewritten) instead of a create-or-replace. A run uses the state only when they equal the output's
bookmark; anything else (a driver killed between the two commits, a first incremental run after
an older version, which kept them as table properties) falls back to computing the state from
the old snapshot, which is what the state saves, so the state can never make a result wrong, only
a run slower.

Example::

    state = state_at(spark, options, log, since, fingerprint)   # None: rebuild it from the old snapshot
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from lakehouse.identifiers import quote_field_path, quote_table_name, split_multipart, sql_string
from lakehouse.windows.definition import Grouping, WindowRecomputeOptions, quote_column
from lakehouse.windows.history import TableLog, table_log
from lakehouse.windows.plan import offset_column
from stream_edge.dataframe.windows import rules
from stream_edge.dataframe.windows.rules import Sql

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

STATE_SUFFIX = "__window_state"
STATE_SNAPSHOT_PROPERTY = "lakehouse.windows.state.source-snapshot"
STATE_DEFINITION_PROPERTY = "lakehouse.windows.state.definition"
#: the state table's snapshots kept: each run adds one; older ones are expired past twice this
STATE_SNAPSHOTS_KEPT = 4


def state_table(output: str) -> str:
    """The state table's name: ``<output>__window_state`` in the output's namespace."""
    return f"{output}{STATE_SUFFIX}"


def build_state(records: "DataFrame", grouping: Grouping) -> "DataFrame":
    """The state after ``records`` (prepared, complete rows): per group ``latest``, ``last`` and
    the records with ``ts > latest - bound`` (``bound``: the spec's closing lag)."""
    from pyspark.sql import functions as F

    spec, order_cols, group_cols = grouping
    bound = spec.closing_lag_ms
    stats = records.groupBy(*group_cols).agg(F.expr(f"{rules.event_time(Sql('max(ts)'))} AS latest"),
                                             F.max(F.struct(*order_cols)).alias("last"))
    columns = records.columns
    open_records = (records.join(F.broadcast(stats.select(*group_cols, "latest")), on=list(group_cols))
                    .where(F.col("ts") > F.col("latest") - F.lit(bound))
                    .groupBy(*group_cols).agg(F.collect_list(F.struct(*columns)).alias("records")))
    return stats.join(open_records, on=list(group_cols), how="left")


def advance_state(prior: "DataFrame", new: "DataFrame", grouping: Grouping,
                  replayed_keys: "DataFrame | None" = None) -> "DataFrame":
    """The state after ``prior`` (a state) and ``new`` (prepared, complete rows): what
    :func:`build_state` of every record ``prior`` has seen and ``new`` gives, in one aggregation (one
    shuffle) instead of three: each new record becomes a one-record state row, the rows of a group
    are merged (``latest``/``last`` by ``max``, the records concatenated), then the records a
    window closing from now on cannot hold (``ts <= latest - bound``) are dropped. Every shuffle is
    a Spark job of its own under adaptive execution, ~0.2-0.5 s each on a small input.

    A sliding state (with ``replayed``) keeps each group's flag, set for ``replayed_keys`` (one
    column, ``key``: the keys the increment recomputed whole).

    Written as SQL text (one round trip to the JVM per step instead of one per column expression:
    an increment builds this plan while its windows' plan is built alongside)."""
    from pyspark.sql import functions as F

    spec, order_cols, group_cols = grouping
    flag = ["replayed"] if "replayed" in prior.columns else []
    groups = list(map(quote_column, group_cols))
    singles = new.selectExpr(*groups, f"{rules.event_time(Sql('ts'))} AS latest",
                             f"struct({', '.join(map(quote_column, order_cols))}) AS last",
                             f"array(struct({', '.join(map(quote_column, new.columns))})) AS records",
                             *(["false AS replayed"] if flag else []))
    merged = (prior.selectExpr(*groups, "latest", "last", "records", *flag).unionByName(singles)
              .groupBy(*group_cols).agg(F.expr("max(latest) AS latest"), F.expr("max(last) AS last"),
                                        F.expr("flatten(collect_list(records)) AS records"),
                                        *([F.expr("max(replayed) AS replayed")] if flag else [])))
    advanced = merged.selectExpr(*groups, "latest", "last",
                                 f"filter(records, r -> r.ts > latest - {int(spec.closing_lag_ms)}) AS records", *flag)
    return with_replayed(advanced, replayed_keys) if flag and replayed_keys is not None else advanced


def with_replayed(state: "DataFrame", keys: "DataFrame") -> "DataFrame":
    """``state`` with ``replayed`` set for the groups of ``keys`` (one column, ``key``)."""
    marked = keys.selectExpr("key", "true AS __again")
    columns = [quote_column(c) for c in state.columns if c != "replayed"]
    previous = "coalesce(replayed, false)" if "replayed" in state.columns else "false"
    return (state.join(marked, on="key", how="left")
            .selectExpr(*columns, f"({previous} OR __again IS NOT NULL) AS replayed"))


def state_sql_name(options: WindowRecomputeOptions) -> str:
    """The state table's name as SQL text (quoted parts)."""
    return quote_table_name(state_table(options.output))


def state_at(spark: "SparkSession", options: WindowRecomputeOptions, log: TableLog, since: int,
             fingerprint: str) -> tuple["DataFrame", int] | None:
    """The state table (and its snapshot count) if it reflects source snapshot ``since`` under
    this definition, else None. ``log``: the state table's (:func:`lakehouse.windows.history.table_logs`:
    an increment reads it in the query that reads the output's and the source's)."""
    snapshot = log.snapshots.get(log.main) if log.main is not None else None
    if snapshot is None or (snapshot.summary.get(STATE_SNAPSHOT_PROPERTY),
                            snapshot.summary.get(STATE_DEFINITION_PROPERTY)) != (str(since), fingerprint):
        return None
    # pinned to the snapshot checked: the run overwrites the table while it still reads this
    # state, and a write makes Spark recompute the cached plans that read the table (an unpinned
    # read would then see the new state)
    return (spark.sql(f"SELECT * FROM {state_sql_name(options)} VERSION AS OF {int(snapshot.snapshot_id)}"),
            len(log.snapshots))


def write_state(state: "DataFrame", options: WindowRecomputeOptions, until: int, fingerprint: str,
                overwrite: bool = False, snapshots: int = 0) -> None:
    """Write ``state`` as the state table's rows, recording ``until`` and the definition in the
    summary of the same commit. ``overwrite``: the table exists with ``state``'s columns (the state
    an incremental run read), so its rows are overwritten in one plain commit; otherwise (full
    runs: the definition, hence the columns, may have changed) the table is created or replaced.
    ``snapshots``: the table's snapshots before the write; past twice :data:`STATE_SNAPSHOTS_KEPT`
    the older ones are expired (Iceberg's ``expire_snapshots`` procedure)."""
    from pyspark.sql import functions as F

    name = state_sql_name(options)
    writer = state.writeTo(name)
    for key, value in {STATE_SNAPSHOT_PROPERTY: str(until), STATE_DEFINITION_PROPERTY: fingerprint}.items():
        writer = writer.option(f"snapshot-property.{key}", value)
    if overwrite:
        writer.overwrite(F.lit(True))
    else:
        writer.using("iceberg").createOrReplace()
    if snapshots + 1 > 2 * STATE_SNAPSHOTS_KEPT:
        expire_old_states(state.sparkSession, options)


def expire_old_states(spark: "SparkSession", options: WindowRecomputeOptions) -> None:
    """Expire the state table's snapshots but the last :data:`STATE_SNAPSHOTS_KEPT` (and the files
    only they held): the state is rewritten by every run, its history is of no use."""
    parts = split_multipart(state_table(options.output))
    catalog, table = parts[0], sql_string(quote_field_path(parts))
    # retain_last alone decides what is kept, so the cut-off only has to be later than every
    # snapshot, whichever clock stamped it: the time here plus a day is, whatever the session's
    # zone or a Connect server's clock. (A cut-off of "now" truncated to the second kept a
    # snapshot committed earlier in that same second.)
    cutoff = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%d %H:%M:%S")
    spark.sql(f"CALL {quote_column(catalog)}.system.expire_snapshots(table => {table}, "
              f"older_than => TIMESTAMP '{cutoff}', retain_last => {STATE_SNAPSHOTS_KEPT})").collect()


def full_state(data: "DataFrame", grouping: Grouping, floor: int | None = None) -> "DataFrame":
    """:func:`build_state` of every record, in two light passes instead of a sort: the per-group
    ``latest``/``last`` by a hash aggregation (``last`` from the largest offset when the other
    order columns are part of the group), kept in memory (one row per group), then only the
    records newer than the smallest ``latest - bound`` of all groups (a literal filter that
    Iceberg's file statistics prune before reading) are joined to their group's bound.

    ``floor``: that smallest ``latest - bound``, when the windows job observed it and saw every
    group's newest and last record above it (``state_floor`` with no ``stale_groups``): then the
    per-group stats come from the records above it too, read once (kept in memory, spilled to disk
    if large), and the whole table is never scanned."""
    from pyspark.sql import functions as F

    spec, order_cols, group_cols = grouping
    bound = spec.closing_lag_ms
    offset = offset_column(order_cols, group_cols)
    if offset is None:
        return build_state(data, grouping)
    if floor is not None:  # one scan, pruned to the newest files; both passes below read what it kept
        data = data.where(F.col("ts") > F.lit(int(floor))).localCheckpoint(eager=True)
    stats = (data.groupBy(*group_cols).agg(F.expr(f"{rules.event_time(Sql('max(ts)'))} AS latest"),
                                           F.max(offset).alias("__last_offset"))
             .select(*group_cols, "latest",
                     F.struct(*[F.col("__last_offset" if c == offset else c).alias(c) for c in order_cols])
                     .alias("last")))
    if floor is None:
        stats = stats.localCheckpoint(eager=True)
        first = stats.agg(F.min("latest")).first()
        oldest = None if first is None else first[0]
        if oldest is None:  # no records
            return stats.withColumn("records", F.lit(None).cast(f"array<struct<{_ddl(data)}>>"))
        floor = int(oldest) - bound
    columns = data.columns
    open_records = (data.where(F.col("ts") > F.lit(int(floor)))
                    .join(F.broadcast(stats.select(*group_cols, "latest")), on=list(group_cols))
                    .where(F.col("ts") > F.col("latest") - F.lit(bound))
                    .groupBy(*group_cols).agg(F.collect_list(F.struct(*columns)).alias("records")))
    return stats.join(open_records, on=list(group_cols), how="left")


def _ddl(df: "DataFrame") -> str:
    return ", ".join(f"{quote_column(f.name)}: {f.dataType.simpleString()}" for f in df.schema.fields)


def save_full_state(data: "DataFrame", options: WindowRecomputeOptions, grouping: Grouping, until: Any,
                    fingerprint: str, floor: int | None = None, replayed_keys: "DataFrame | None" = None) -> None:
    """After a full recompute at source snapshot ``until``: the state from all (prepared, complete)
    records (``floor``: :func:`full_state`); sliding windows flag the groups of ``replayed_keys``
    (one column, ``key``: the keys the edge's engines computed; None: none)."""
    if until is None:
        return
    state = full_state(data, grouping, floor)
    if grouping.spec.kind == "sliding":
        state = (state.selectExpr("*", "false AS replayed") if replayed_keys is None
                 else with_replayed(state, replayed_keys))
    write_state(state, options, int(until), fingerprint)

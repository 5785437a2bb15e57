"""The windows an increment adds to its tail groups, in one shuffle and no job of its own.

An incremental run of tumbling or hopping windows (:mod:`lakehouse.window_incremental`) adds, for
each closing group whose new records all follow its old ones in offset order (a *tail* group),
the windows that close now. What it needs per group, the old records' ``latest`` and ``last``
(from the window state, :mod:`lakehouse.window_state`) against the new records' first, used to
come from a join and an aggregation collected before the windows were planned: one Spark action
and up to seven jobs (adaptive execution runs every shuffle stage as a job), a fixed cost larger
than the windows themselves on a 1% increment.

Here the state's open records and the new records go through one exchange by group, and window
aggregates over the whole group give each record its group's ``__old_latest``, ``__old_last``
and the new records' first position; the tail test and the closed floor are then column
expressions, evaluated in the same sort as the windows' own offset-order frames. The run learns
what the summary used to tell it (the new rows, the groups with new records, the reordered
ones) from an observation of the write (``DataFrame.observe``), after the rows are appended; a
reordered group's rows are left out, and the caller replaces its keys (or runs a full
recompute) before it records the bookmark.

Where the JVM loop runs (:mod:`lakehouse.window_loop`), it does all of that in the one job that
appends the windows (:func:`loop_increment`): the state's open records and the new rows
(:func:`loop_tail_rows`) take the loop's sort, and the loop tells the tail groups from the
reordered ones, closes the windows up to each group's old bound, holds a reordered group's
windows back, and gathers the state after the new rows (an accumulator, as in a full run), which
is then written beside the bookmark's commit instead of a job of its own advancing the state.
A small increment (at most :data:`DRIVER_WRITE_MAX_ROWS` new records) collects its windows to
the driver, which writes them and the gathered state as one Parquet file each and commits them
with Iceberg's API (``streamlake.windows.DriverWrite``): the loop's job is the increment's only
Spark job. Each Spark write costs ~0.1-0.2 s of planning and a job of its own whatever its size.

Example::

    records, observation = tail_records(state, arrived, complete, group_cols, order_cols, bound)
    rows = compute_windows_of(records, spec, order_cols, group_cols, value_type, "native")
    ...  # after the rows were written: observation.get["reordered"], ["new_rows"], ["changed"]
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Callable, Sequence

from lakehouse.window_native import quote_column

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: the most new records an increment may have for its windows and window state to be written from
#: the driver (``streamlake.windows.DriverWrite``: one Parquet file each, Iceberg's API commits them,
#: no Spark write); larger increments write through Spark, whose fixed cost is then a small part
DRIVER_WRITE_MAX_ROWS = 500_000

__all__ = ("DRIVER_WRITE_MAX_ROWS", "append_tail", "loop_gathers", "loop_increment", "loop_tail_rows", "save_gathered", "tail_records")


def _state_rows(state: "DataFrame", columns: Sequence[str], group_cols: Sequence[str]) -> "DataFrame":
    """The state's open records as prepared rows, each with its group's ``__old_latest`` and
    ``__old_last``; a group without open records keeps one row with no record (``__record``
    false), so its figures still reach the group."""
    exploded = state.selectExpr(*map(quote_column, group_cols), "latest", "last", "explode_outer(records) AS __r")
    fields = [quote_column(c) if c in group_cols else f"__r.{quote_column(c)} AS {quote_column(c)}" for c in columns]
    return exploded.selectExpr(*fields, "latest AS __old_latest", "last AS __old_last", "false AS __new",
                               "__r IS NOT NULL AS __record")


def _new_rows(arrived: "DataFrame", state: "DataFrame", complete: str) -> "DataFrame":
    """Every new row (incomplete ones too: they are counted, not windowed), typed like the state's."""
    types = {f.name: f.dataType.simpleString() for f in state.schema.fields}
    return arrived.selectExpr(*map(quote_column, arrived.columns), f"CAST(NULL AS {types['latest']}) AS __old_latest",
                              f"CAST(NULL AS {types['last']}) AS __old_last", "true AS __new",
                              f"({complete}) AS __record")


def tail_records(state: "DataFrame", arrived: "DataFrame", complete: str, group_cols: Sequence[str],
                 order_cols: Sequence[str], bound: int) -> tuple["DataFrame", Any]:
    """The records the windows closing now are made of (the prepared columns, ``__gh`` and
    ``__closed_floor``): those of tail groups with new complete records (``complete``: the SQL
    condition of a complete row), newer than the group's
    closed floor ``__old_latest - bound``; and the observation (``pyspark.sql.Observation``) that
    the action computing them fills: ``new_rows`` (every row read, as ``count()`` would),
    ``changed`` (groups with new complete records) and ``reordered`` (of those, the groups whose
    new records sit between old ones; their records are left out).

    The per-group figures are frames over the whole group, partitioned and ordered as the
    windows' offset-order frames (:func:`lakehouse.window_native.fixed_event_times`), so the plan
    keeps one exchange and one sort.

    Written as SQL text: every column expression built in Python is a round trip to the JVM
    (a ``Column`` object per ``F.col``, operator and alias), ~600 of them for this plan before,
    which an increment paid on its critical path; a ``selectExpr`` is one."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    columns = list(arrived.columns)
    rows = _state_rows(state, columns, group_cols).unionByName(_new_rows(arrived, state, complete))
    # the same hash as lakehouse.window_native.group_hash (xxhash64 of the group's columns)
    groups = ", ".join(map(quote_column, group_cols))
    rows = rows.selectExpr("*", f"xxhash64({groups}) AS __gh")
    ordered = f"PARTITION BY __gh, {groups} ORDER BY {', '.join(map(quote_column, order_cols))}"
    whole = f"({ordered} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    with_group = rows.selectExpr(
        "*", f"max(__old_latest) OVER {whole} AS __latest", f"max(__old_last) OVER {whole} AS __last",
        f"min(CASE WHEN __new AND __record THEN struct({', '.join(map(quote_column, order_cols))}) END) OVER {whole}"
        " AS __new_first", f"row_number() OVER ({ordered}) = 1 AS __group_row")
    has_new = "__new_first IS NOT NULL"
    tail = "(__last IS NULL OR __new_first > __last)"
    observation = Observation(f"windows_tail_{uuid.uuid4().hex}")
    observed = with_group.observe(
        observation, F.expr("count(CASE WHEN __new THEN 1 END) AS new_rows"),
        F.expr(f"count(CASE WHEN __group_row AND {has_new} THEN 1 END) AS changed"),
        F.expr(f"count(CASE WHEN __group_row AND {has_new} AND NOT {tail} THEN 1 END) AS reordered"))
    kept = observed.where(f"__record AND {has_new} AND {tail} AND (__latest IS NULL OR ts > __latest - {int(bound)})")
    floor = f"__latest - {int(bound)} AS __closed_floor"
    return kept.selectExpr(*map(quote_column, columns), "__gh", floor), observation


def loop_tail_rows(state: "DataFrame", arrived: "DataFrame", complete: str, group_cols: Sequence[str]) -> "DataFrame":
    """An increment's rows for the JVM loop (:data:`lakehouse.window_loop.INCREMENT_COLUMNS`): the
    state's open records (a group without any keeps one row without a record) with the group's
    ``__old_latest`` and ``__old_last``, and every new row. No frame, no exchange of its own: the
    loop's sort brings each group's rows together in offset order, and the loop tells the tail
    groups from the reordered ones, closes the windows up to the old bound and gathers the state
    after the new rows (:func:`lakehouse.window_loop.loop_windows`)."""
    columns = list(arrived.columns)
    rows = _state_rows(state, columns, group_cols).unionByName(_new_rows(arrived, state, complete))
    return rows.drop("__record")


def append_tail(target: Any, state: "DataFrame", arrived: "DataFrame", complete: str, spec: Any,
                group_cols: list[str], order_cols: list[str], value_type: Any, path: str,
                gathered: Any = None, bookmark: dict[str, str] | None = None,
                computed_hook: Callable[[], None] | None = None) -> tuple[int, int, int, bool]:
    """Append the windows that close now in the tail groups to ``target``: (new rows, window rows
    appended, reordered groups, whether the append carried ``bookmark``). Spark's operators
    compute the windows from :func:`tail_records` in the append's own job, so the bookmark (it
    holds only once the observation says no group was reordered) needs a commit of its own after
    it; a driver lost before that commit leaves an output without one, which the next run
    recomputes in full. ``gathered`` (:class:`lakehouse.window_loop.LoopState`): the JVM loop
    computes the windows from :func:`loop_tail_rows` and gathers the state after the new rows,
    in a job that keeps its rows (``localCheckpoint``, or on the driver when
    ``gathered.driver_writes``: :func:`_append_collected`) and fills its figures before
    anything is written; then ``computed_hook`` runs (the state's write starts alongside) and the
    append carries the bookmark when no group was reordered."""
    from lakehouse.window_commits import append_windows
    from lakehouse.window_incremental import compute_windows_of
    from lakehouse.window_loop import DRIVER_WRITE_CLASS, loop_figures, loop_windows

    if gathered is not None:
        seen = loop_figures(arrived.sparkSession)
        rows = loop_windows(loop_tail_rows(state, arrived, complete, group_cols), spec, order_cols, group_cols, seen,
                            gathered)
        typed = rows.selectExpr("key", "window_start", "window_end",
                                f"CAST(value AS {value_type.simpleString()}) AS value")
        spark = typed.sparkSession
        jvm: Any = spark.sparkContext._jvm
        # a small increment's windows go to the driver, the others stay on the executors
        collected: Any = getattr(jvm, DRIVER_WRITE_CLASS).collect(typed._jdf) if gathered.driver_writes else None
        computed = typed.localCheckpoint(eager=True) if collected is None else None
        counts = seen.get
        reordered = int(counts["reordered"] or 0)
        if computed_hook is not None:
            computed_hook()
        properties = {} if reordered else (bookmark or {})
        if computed is not None:
            written = append_windows(target, [computed], properties)
        else:
            written = _append_collected(target, collected, properties)
        return int(counts["new_rows"] or 0), written, reordered, bool(bookmark) and not reordered
    records, seen = tail_records(state, arrived, complete, group_cols, order_cols, spec.grace_ms + spec.duration_ms)
    written = append_windows(target, [compute_windows_of(records, spec, order_cols, group_cols, value_type, path)],
                             {})
    counts = seen.get
    if computed_hook is not None:
        computed_hook()
    return int(counts["new_rows"] or 0), written, int(counts["reordered"] or 0), False


def _append_collected(target: Any, collected: Any, properties: dict[str, str]) -> int:
    """Append the windows collected on the driver (``DriverWrite.Rows``) to ``target`` in one commit
    carrying ``properties``, from the driver; through Spark when the output's columns are not the
    rows' (then nothing was written before)."""
    from pyspark.sql import DataFrame

    from lakehouse.fault_injection import pause_point
    from lakehouse.window_commits import append_windows
    from lakehouse.window_loop import DRIVER_WRITE_CLASS

    spark = target.spark
    jvm: Any = spark.sparkContext._jvm
    pause_point("windows.before-commit")
    written = int(getattr(jvm, DRIVER_WRITE_CLASS).append(spark._jsparkSession, target.identifier, collected,
                                                          properties))
    if written >= 0:
        return written
    return append_windows(target, [DataFrame(collected.frame(spark._jsparkSession), spark)], properties, pause=False)


def loop_gathers(options: Any, arrived: "DataFrame", group_cols: list[str], order_cols: list[str], bound: int) -> Any:
    """Where the JVM loop gathers the state after an increment of tumbling or hopping windows
    (:func:`lakehouse.window_loop.loop_state`), or None when Spark's operators compute the
    increment (the loop is off or unavailable, order columns other than int/bigint besides the
    group's, a value the loop reads cast)."""
    from pyspark.sql import types as T

    from lakehouse.window_loop import loop_state, loop_unavailable_reason
    from lakehouse.window_recompute import choose_path

    spec = options.window
    if choose_path(spec, options.engine) != "native" or spec.kind == "sliding":
        return None
    offsets = [c for c in order_cols if c not in group_cols]
    if not all(isinstance(arrived.schema[c].dataType, (T.IntegerType, T.LongType)) for c in offsets):
        return None
    if loop_unavailable_reason(arrived, options.loop) is not None:
        return None
    return loop_state(arrived, group_cols, order_cols, bound, columns=arrived.columns)


def save_gathered(spark: "SparkSession", gathered: Any, state: "DataFrame", new: "DataFrame", options: Any,
                  group_cols: list[str], order_cols: list[str], until: int, fingerprint: str) -> None:
    """Write the state the loop gathered (an overwrite when its schema is the table's), or, when it
    was too large to gather, the state advanced by a job of its own (:func:`_save_state`)."""
    from lakehouse.window_incremental import _save_state
    from lakehouse.window_state import state_properties, state_table, write_state

    same_columns = gathered.schema is not None and gathered.schema.json() == state.schema.json()
    if gathered.driver_writes and same_columns and gathered.overwrite(
            spark, state_table(options.output), state_properties(until, fingerprint, gathered.open_records())):
        return  # written from the driver: no Spark write for a few thousand rows
    frame = gathered.frame(spark)
    if frame is None:
        _save_state(state, new, options, group_cols, order_cols, until, fingerprint, True)
        return
    write_state(frame, options, until, fingerprint, overwrite=frame.schema.json() == state.schema.json(),
                open_records=gathered.open_records())


def loop_increment(spark: "SparkSession", options: Any, plan: Any, source: Any, target: Any,
                   say: Callable[[str], None], state: "DataFrame", arrived: "DataFrame", group_cols: list[str],
                   order_cols: list[str], complete: Any, gathered: Any) -> tuple[int, int, str] | None:
    """:func:`lakehouse.window_incremental.run_increment` on the JVM loop (``gathered``:
    :func:`loop_gathers`): one job computes the windows and gathers the state after the new rows;
    the state is then written alongside the windows' append, which carries the bookmark (or,
    with reordered keys, alongside the append and the MERGE that replaces those keys). The state
    is not cached: the loop's job reads it once (a reordered key's fallback reads its pinned
    snapshot again). When the new rows and the state's rows (open records, a row per group without
    any) are few (:data:`lakehouse.window_loop.ONE_TASK_MAX_ROWS`), the loop's job is one task
    without a shuffle."""
    from concurrent.futures import Future, ThreadPoolExecutor, wait

    from lakehouse.window_incremental import _emit_windows, definition_fingerprint
    from lakehouse.window_loop import ONE_TASK_MAX_ROWS, driver_writes_available
    from lakehouse.window_state import state_input_rows

    added = getattr(plan, "added_records", None)
    gathered.driver_writes = (added is not None and added <= DRIVER_WRITE_MAX_ROWS
                              and driver_writes_available(spark))
    # a state the loop gathered recorded its open records; one Spark's operators built did not
    state_rows = state_input_rows(spark, options) if gathered.driver_writes else None
    gathered.one_task = added is not None and state_rows is not None and added + state_rows <= ONE_TASK_MAX_ROWS
    saving: list[Future[None]] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="window-state") as pool:
        def save() -> None:  # once the windows are computed: the state the loop gathered
            saving.append(pool.submit(save_gathered, spark, gathered, state, arrived.where(complete), options,
                                      group_cols, order_cols, plan.until, definition_fingerprint(options)))
        try:
            result = _emit_windows(spark, options, plan, source, target, say, state, arrived, group_cols,
                                   order_cols, complete, gathered, save)
        finally:
            wait(saving)  # no job left running (a full recompute after None replaces the state)
    for future in saving:
        future.result()  # the state write's own error, if any
    return result

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

Example::

    records, observation = tail_records(state, arrived, complete, group_cols, order_cols, bound)
    rows = compute_windows_of(records, spec, order_cols, group_cols, value_type, "native")
    ...  # after the rows were written: observation.get["reordered"], ["new_rows"], ["changed"]
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ("append_tail", "tail_records")


def _state_rows(state: "DataFrame", columns: Sequence[str], group_cols: Sequence[str]) -> "DataFrame":
    """The state's open records as prepared rows, each with its group's ``__old_latest`` and
    ``__old_last``; a group without open records keeps one row with no record (``__record``
    false), so its figures still reach the group."""
    from pyspark.sql import functions as F

    exploded = state.select(*group_cols, "latest", "last", F.explode_outer("records").alias("__r"))
    fields = [F.col(c) if c in group_cols else F.col(f"__r.{c}").alias(c) for c in columns]
    return exploded.select(*fields, F.col("latest").alias("__old_latest"), F.col("last").alias("__old_last"),
                           F.lit(False).alias("__new"), F.col("__r").isNotNull().alias("__record"))


def _new_rows(arrived: "DataFrame", state: "DataFrame", complete: "Column") -> "DataFrame":
    """Every new row (incomplete ones too: they are counted, not windowed), typed like the state's."""
    from pyspark.sql import functions as F

    return arrived.select(*arrived.columns, F.lit(None).cast(state.schema["latest"].dataType).alias("__old_latest"),
                          F.lit(None).cast(state.schema["last"].dataType).alias("__old_last"),
                          F.lit(True).alias("__new"), complete.alias("__record"))


def tail_records(state: "DataFrame", arrived: "DataFrame", complete: "Column", group_cols: Sequence[str],
                 order_cols: Sequence[str], bound: int) -> tuple["DataFrame", Any]:
    """The records the windows closing now are made of (the prepared columns, ``__gh`` and
    ``__closed_floor``): those of tail groups with new complete records, newer than the group's
    closed floor ``__old_latest - bound``; and the observation (``pyspark.sql.Observation``) that
    the action computing them fills: ``new_rows`` (every row read, as ``count()`` would),
    ``changed`` (groups with new complete records) and ``reordered`` (of those, the groups whose
    new records sit between old ones; their records are left out).

    The per-group figures are frames over the whole group, partitioned and ordered as the
    windows' offset-order frames (:func:`lakehouse.window_native.fixed_event_times`), so the plan
    keeps one exchange and one sort."""
    from pyspark.sql import Observation, Window
    from pyspark.sql import functions as F

    from lakehouse.window_native import group_hash

    columns = list(arrived.columns)
    rows = _state_rows(state, columns, group_cols).unionByName(_new_rows(arrived, state, complete))
    rows = rows.withColumn("__gh", group_hash(group_cols))
    ordered = Window.partitionBy("__gh", *group_cols).orderBy(*order_cols)
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    new_record = F.col("__new") & F.col("__record")
    with_group = rows.select(
        "*", F.max("__old_latest").over(whole).alias("__latest"), F.max("__old_last").over(whole).alias("__last"),
        F.min(F.when(new_record, F.struct(*order_cols))).over(whole).alias("__new_first"),
        (F.row_number().over(ordered) == 1).alias("__group_row"))
    has_new = F.col("__new_first").isNotNull()
    tail = F.col("__last").isNull() | (F.col("__new_first") > F.col("__last"))
    observation = Observation(f"windows_tail_{uuid.uuid4().hex}")
    first = F.col("__group_row")
    observed = with_group.observe(
        observation, F.count(F.when(F.col("__new"), 1)).alias("new_rows"),
        F.count(F.when(first & has_new, 1)).alias("changed"),
        F.count(F.when(first & has_new & ~tail, 1)).alias("reordered"))
    floor = F.col("__latest") - F.lit(bound)
    kept = observed.where(F.col("__record") & has_new & tail & (F.col("__latest").isNull() | (F.col("ts") > floor)))
    return kept.select(*columns, "__gh", floor.alias("__closed_floor")), observation


def append_tail(target: Any, state: "DataFrame", arrived: "DataFrame", complete: "Column", spec: Any,
                group_cols: list[str], order_cols: list[str], value_type: Any, path: str) -> tuple[int, int, int]:
    """Append the windows that close now in the tail groups to ``target``, without the bookmark
    (it holds only once the observation says no group was reordered): (new rows, window rows
    appended, reordered groups). A driver lost before the bookmark's own commit leaves an output
    without one, which the next run recomputes in full."""
    from lakehouse.window_incremental import append_windows, compute_windows_of

    records, seen = tail_records(state, arrived, complete, group_cols, order_cols, spec.grace_ms + spec.duration_ms)
    written = append_windows(target, [compute_windows_of(records, spec, order_cols, group_cols, value_type, path)],
                             {})
    counts = seen.get
    return int(counts["new_rows"] or 0), written, int(counts["reordered"] or 0)

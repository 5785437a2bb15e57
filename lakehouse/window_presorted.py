"""Sliding windows in one sort when no record came late: the plan a full run tries first.

The exact native plan (:mod:`lakehouse.window_native`) sorts every record by Kafka offset within
its group, because a record's fate depends on the event time *at its arrival* (the largest
timestamp before it in offset order), and then sorts again by timestamp for the sliding frame.
The offset order only matters where a record arrived late, and that can be decided in timestamp
order:

    a record ``r`` arrived more than ``grace`` behind its group's event time exactly when some
    record ``q`` of its group with ``ts(q) >= ts(r) + grace + 1`` has a smaller offset, i.e. when
    ``min(offset of the records with ts >= ts(r) + grace + 1) < offset(r)``.

That minimum is a ``RANGE`` frame over the timestamps, evaluated in the same window operator as
the sliding sums. When no record is late (and none lies near time 0), every record is accepted,
none lands in an already-closed window, and the closed form is exact for every group: one sort,
one window operator. Otherwise (:func:`presorted_sliding_windows` counts them) the caller runs the
exact plan.

It applies when a group orders its records by a single column (the offset; the partition is part
of the group) and is per key; :func:`offset_column` says which.

(Tumbling and hopping windows were tried the same way, from per-(group, step) hash aggregates with
a small sort of the buckets: slower than the exact plan's single sort here, because the check
needs the buckets twice; see ``bench/README.md``.)

Example::

    off = offset_column(order_cols, group_cols)      # None: use the exact plan
    rows = presorted_sliding_windows(data, spec, off, group_cols, observation)   # valid if late == 0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from lakehouse.window_recompute import WindowSpec

__all__ = ("offset_column", "presorted_sliding_windows")


def offset_column(order_cols: Sequence[str], group_cols: Sequence[str]) -> str | None:
    """The one order column that is not part of the group (the offset), or None when there is no
    single one, or the group is not per key (then the exact plans apply)."""
    rest = [c for c in order_cols if c not in group_cols]
    return rest[0] if len(rest) == 1 and "key" in group_cols else None


def _frame_value(aggregation: str, frame: Any) -> "Column":
    from pyspark.sql import functions as F

    if aggregation == "sum":
        return F.sum("value").over(frame)
    if aggregation == "count":
        return F.count("value").over(frame)
    if aggregation == "mean":
        return F.sum(F.col("value").cast("double")).over(frame) / F.count("value").over(frame)
    if aggregation == "min":
        return F.min("value").over(frame)
    if aggregation == "max":
        return F.max("value").over(frame)
    raise ValueError(f"aggregation {aggregation!r} has no native form")


def presorted_sliding_windows(data: "DataFrame", spec: "WindowSpec", offset: str, group_cols: Sequence[str],
                              observation: Any) -> "DataFrame":
    """Sliding ``final()`` rows (``__gh``, ``key``, ``window_start``, ``window_end``, ``value``) of
    ``data``, newest first within each group, *valid only when* ``observation`` reports ``late``
    = 0 (it also receives ``groups``). ``late`` counts the records that arrived more than
    ``grace`` behind their group's event time or lie within ``2 * duration + grace`` of time 0;
    without any, every record is accepted, none falls in an already-closed window, and the
    closed form holds for every group. Otherwise the caller runs the exact plan."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from lakehouse.window_native import _with_group_hash

    assert isinstance(spec.aggregation, str)
    d, g = spec.duration_ms, spec.grace_ms
    # newest first: every frame then grows or slides forward (a frame reaching to the end of the
    # partition would be recomputed for every row), and all of them share one window operator
    by_time = Window.partitionBy("__gh", *group_cols).orderBy(F.col("ts").desc())
    # the group's records at least grace + 1 ms newer than this one: the smallest offset among
    # them (smaller than this record's: one of them came first, so this record arrived late), and
    # whether there is any (then the group's final event time is at least ts + grace + 1, which is
    # when final() emits the window ending at ts; timestamps are positive here, or __late is set).
    # Two aggregates of one frame: three frames per row in all (the sum, this one, lag)
    newer = by_time.rangeBetween(Window.unboundedPreceding, -(g + 1))
    rows = _with_group_hash(data, group_cols).select(
        "__gh", "key", "ts",
        _frame_value(spec.aggregation, by_time.rangeBetween(0, d)).alias("value"),
        ((F.min(offset).over(newer) < F.col(offset)) | (F.col("ts") <= 2 * d + g)).cast("int").alias("__late"),
        F.lag("ts").over(by_time).alias("__newer_ts"),
        (F.count(F.lit(1)).over(newer) > 0).alias("__closed"))
    rows = rows.observe(observation, F.sum(F.col("__newer_ts").isNull().cast("int")).alias("groups"),
                        F.sum("__late").alias("late"))
    # one window per distinct timestamp (the first of its peers; the frame gives peers one value)
    emitted = rows.where(F.col("__closed") & (F.col("__newer_ts").isNull() | (F.col("__newer_ts") != F.col("ts"))))
    return emitted.select("__gh", "key", F.greatest(F.lit(0).cast("long"), F.col("ts") - d).alias("window_start"),
                          F.col("ts").alias("window_end"), "value")



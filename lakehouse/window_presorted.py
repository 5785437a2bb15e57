"""Window plans for groups whose records arrive in time order: one sort, or none.

The exact native plans (:mod:`lakehouse.window_native`) sort every record by Kafka offset within
its closing group, because a record's lateness depends on the event time *at its arrival* (the
largest timestamp of the records before it in offset order). That sort is only needed where a
record arrived after something closed it. Whether that happened can be decided without it:

    a record ``r`` is late for a bound ``C`` (a window closes at ``C``; its sliding window closed at
    ``ts + grace + 1``) exactly when some record ``q`` of its group with ``ts(q) >= C`` has a smaller
    offset, i.e. when ``min(offset of the records with ts >= C) < offset(r)``.

That minimum is a ``RANGE`` frame over the timestamps (sliding windows, whose own frame needs the
records in timestamp order anyway), or a suffix minimum over per-bucket aggregates (fixed windows:
a hash aggregation, then a small sort of the buckets). A group with no such record is *clean*: its
windows are the closed forms over all its records. The other (*dirty*) groups go through the exact
plans, record by record.

* :func:`presorted_sliding_windows`: one sort by (group, timestamp) and one window operator give the
  clean groups' sliding windows and the number of dirty groups (an observation). The caller
  reruns the exact plan when that number is not 0 (``run_window_recompute``).
* :func:`bucketed_fixed_windows`: tumbling/hopping windows from per-(group, step) aggregates, with
  the dirty groups' windows from :func:`lakehouse.window_native.native_fixed_windows` in the same job.

Both apply when a closing group orders its records by a single column (the offset, the partition
being part of the group) and ``key`` is part of the group; :func:`offset_column` says which.

Example::

    off = offset_column(order_cols, group_cols)      # None: use the exact plans
    rows = presorted_sliding_windows(data, spec, off, group_cols, observation)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from lakehouse.window_recompute import WindowSpec

__all__ = ("offset_column", "presorted_sliding_windows", "bucketed_fixed_windows")


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
    the clean groups of ``data``, in (group, window end) order; ``observation`` receives ``groups``
    and ``dirty``. A group is clean when no record arrived more than ``grace`` behind the group's
    event time (then every record is accepted and no window it falls in was closed) and every
    timestamp is above ``2 * duration + grace`` (away from time 0); the rows of the dirty groups
    are *not* produced: when ``dirty`` is not 0 the caller runs the exact plan."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from lakehouse.window_native import _with_group_hash

    assert isinstance(spec.aggregation, str)
    d, g = spec.duration_ms, spec.grace_ms
    # newest first: both frames then grow or slide forward (a frame reaching to the end of the
    # partition would be recomputed for every row)
    by_time = Window.partitionBy("__gh", *group_cols).orderBy(F.col("ts").desc())
    whole = Window.partitionBy("__gh", *group_cols)
    # the smallest offset among the group's records at least grace + 1 ms newer than this one: a
    # smaller offset than this record's means one of them came first, so this record arrived late
    newer_first = F.min(offset).over(by_time.rangeBetween(Window.unboundedPreceding, -(g + 1)))
    rows = _with_group_hash(data, group_cols).select(
        "__gh", *group_cols, *([] if "key" in group_cols else ["key"]), "ts",
        _frame_value(spec.aggregation, by_time.rangeBetween(0, d)).alias("value"),
        ((newer_first < F.col(offset)) | (F.col("ts") <= 2 * d + g)).cast("int").alias("__awkward"),
        (F.row_number().over(by_time) == 1).cast("int").alias("__first_of_group"),
        F.lag("ts").over(by_time).alias("__next_ts"))
    rows = rows.select("*", F.max("__awkward").over(whole).alias("__dirty"),
                       F.greatest(F.lit(0).cast("long"), F.max("ts").over(whole)).alias("__final"))
    rows = rows.observe(observation, F.sum("__first_of_group").alias("groups"),
                        F.sum(F.col("__first_of_group") * F.col("__dirty")).alias("dirty"))
    # one window per distinct timestamp (the first of its peers; the frame gives peers one value)
    emitted = rows.where((F.col("__dirty") == 0) & (F.col("ts") <= F.col("__final") - g - 1)
                         & (F.col("__next_ts").isNull() | (F.col("__next_ts") != F.col("ts"))))
    return emitted.select("__gh", "key", F.greatest(F.lit(0).cast("long"), F.col("ts") - d).alias("window_start"),
                          F.col("ts").alias("window_end"), "value")


def bucketed_applies(spec: "WindowSpec", data_columns: Sequence[str], offset: str | None) -> bool:
    """Whether :func:`bucketed_fixed_windows` computes ``spec``: tumbling, or hopping with a
    duration that is a multiple of the step, a single offset column, no incremental floor."""
    if offset is None or spec.kind == "sliding" or "__closed_floor" in data_columns:
        return False
    return spec.step_ms is None or spec.duration_ms % spec.step_ms == 0


def bucketed_fixed_windows(data: "DataFrame", spec: "WindowSpec", order_cols: Sequence[str], offset: str,
                           group_cols: Sequence[str], observation: Any = None) -> "DataFrame":
    """Tumbling/hopping ``final()`` rows (as :func:`lakehouse.window_native.native_fixed_windows`:
    ``__gh``, ``key``, ``window_start``, ``window_end``, ``value``) without a record-level sort for
    the clean groups. ``observation`` receives ``groups`` and ``dirty``.

    1. A hash aggregation per (group, bucket of one step): the partial aggregates, the largest
       offset, and the smallest offset of the records closing each window (a record closes the
       windows with ``start + duration + grace <= ts``; a bucket's records close up to one of two
       window starts, split by ``ts mod step``).
    2. Per group, buckets newest first: the smallest offset of the records closing the oldest
       window that holds a bucket; at or below the bucket's largest offset, a record of that
       window may have arrived after it closed, and the group is dirty. Negative timestamps make a
       group dirty too (event time starts at 0).
    3. Clean groups: each window merges its buckets' partial aggregates; emitted when the group's
       final event time reaches its end + grace. Dirty groups: the exact plan on their records
       (a broadcast semi-join picks them before the shuffle).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from lakehouse.window_native import _finish, _kept_columns, _merge, _partials, _with_group_hash, \
        native_fixed_windows

    assert isinstance(spec.aggregation, str)
    d, g = spec.duration_ms, spec.grace_ms
    step = spec.step_ms or d
    n = d // step  # buckets per window
    q, r = divmod(d + g, step)
    hashed = _with_group_hash(data, group_cols)
    kept = _kept_columns(group_cols)
    b = F.floor(F.col("ts") / step).cast("long")
    low = (F.col("ts") - b * step) < r  # closes up to window b - q - 1, else b - q
    buckets = (hashed.withColumn("__b", b).withColumn("__low", low)
               .groupBy(*kept, "__b")
               .agg(*_partials(spec.aggregation), F.max(offset).alias("__maxoff"),
                    F.min(F.when(F.col("__low"), F.col(offset))).alias("__minoff_lo"),
                    F.min(F.when(~F.col("__low"), F.col(offset))).alias("__minoff_hi"),
                    F.max("ts").alias("__maxts"), F.min("ts").alias("__mints")))
    newest_first = Window.partitionBy("__gh", *group_cols).orderBy(F.col("__b").desc())
    whole = Window.partitionBy("__gh", *group_cols)
    # the oldest window holding bucket b1 starts at k = b1 - n + 1; records closing it: the low
    # part of buckets b >= k + q + 1, the high part of buckets b >= k + q
    lo_from, hi_from = q - n + 2, q - n + 1
    closing = F.least(F.min("__minoff_lo").over(newest_first.rangeBetween(Window.unboundedPreceding, -lo_from)),
                      F.min("__minoff_hi").over(newest_first.rangeBetween(Window.unboundedPreceding, -hi_from)))
    flagged = buckets.select(
        "*", (F.coalesce(closing <= F.col("__maxoff"), F.lit(False)) | (F.col("__mints") < 0)).cast("int")
        .alias("__bad"),
        (F.row_number().over(newest_first) == 1).cast("int").alias("__first_of_group"))
    flagged = flagged.select("*", F.max("__bad").over(whole).alias("__dirty"),
                             F.greatest(F.lit(0).cast("long"), F.max("__maxts").over(whole)).alias("__final"))
    dirty_groups = flagged.where("__dirty = 1").select("__gh", *group_cols).distinct()
    if observation is not None:
        flagged = flagged.observe(observation, F.sum("__first_of_group").alias("groups"),
                                  F.sum(F.col("__first_of_group") * F.col("__dirty")).alias("dirty"))
    clean = flagged.where("__dirty = 0")
    if n == 1:
        windows = clean.select(*kept, (F.col("__b") * step).alias("window_start"), "__final",
                               _finish(spec.aggregation).alias("value"))
    else:
        starts = clean.withColumn("__k", F.explode(F.sequence(F.greatest(F.lit(0).cast("long"), F.col("__b") - n + 1),
                                                              F.col("__b"))))
        windows = (starts.groupBy(*kept, "__k").agg(_merge(spec.aggregation).alias("value"),
                                                    F.max("__final").alias("__final"))
                   .select(*kept, (F.col("__k") * step).alias("window_start"), "__final", "value"))
    emitted = windows.where(F.col("window_start") + d + g <= F.col("__final"))
    clean_rows = emitted.select("__gh", "key", "window_start", (F.col("window_start") + d).alias("window_end"),
                                "value")
    dirty_records = hashed.join(F.broadcast(dirty_groups), on=["__gh", *group_cols], how="left_semi")
    exact = native_fixed_windows(dirty_records, spec, order_cols, group_cols)
    return clean_rows.unionByName(exact.select(*clean_rows.columns))

"""Native window recompute: the edge's ``final()`` rows from DataFrame operations only.

The Python-engine path (:mod:`lakehouse.window_recompute`) feeds each group's records through the
edge's engines one by one inside ``applyInPandas``. Here the same rows come from window functions
and aggregations that Spark runs in the JVM, with no Python per row. The edge's rules
(``stream_edge/dataframe/windows/math.py``), written as column expressions:

* **Event time** of a record = the largest timestamp of its closing group (the key, or the Kafka
  partition with ``closing="partition"``) up to and including the record, in Kafka offset order,
  starting at 0: ``greatest(0, max(ts) OVER (PARTITION BY group ORDER BY offset ROWS UNBOUNDED
  PRECEDING))``.
* **Tumbling / hopping**: a record goes into each window ``[start, start + duration)`` holding its
  timestamp (starts are multiples of the step, never negative for hopping) unless the window was
  already closed: ``start <= event_time - grace - duration`` means late, dropped for that window.
  Once closed a window never reopens (event time only grows), so a window's content is exactly its
  non-late records, whatever their order. A window is emitted by ``final()`` when the group's
  event time at the end of the data reaches ``end + grace``; windows still open are not emitted.
* **Sliding** (per key): a record is dropped when ``ts <= event_time - duration - grace - 1``.
  Each accepted timestamp ``t`` ends one result window ``[t - duration, t]`` holding every accepted
  record of the key in that range (a ``RANGE`` frame over the timestamps), emitted when
  ``t <= final event time - grace - 1``. That closed form equals the edge's incremental algorithm
  for keys whose accepted records never land in an already-closed window and lie away from time 0
  (``sliding_key_is_native``); other keys are replayed through the edge's engines by the caller.

Floating-point sums and means add the same numbers in a different order than the edge, so they
may differ in the last bits (the parity tests compare them with a relative tolerance of 1e-9);
integer results are exact.

Example::

    rows = native_fixed_windows(data, spec, order_cols=["__order_0", "__order_1"], group_col="key")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from lakehouse.window_recompute import WindowSpec

__all__ = ("NATIVE_AGGREGATIONS", "native_unsupported_reason", "native_fixed_windows", "native_sliding_windows",
           "sliding_key_flags")

#: aggregations the native path computes (the rest go through the edge's engines)
NATIVE_AGGREGATIONS = ("sum", "count", "mean", "min", "max")


def native_unsupported_reason(spec: "WindowSpec") -> str | None:
    """None when ``spec`` is expressible natively, else why not (custom aggregations)."""
    aggregation = spec.aggregation
    if not isinstance(aggregation, str):
        return f"custom aggregation {type(aggregation).__name__}"
    if aggregation not in NATIVE_AGGREGATIONS:
        return f"aggregation {aggregation}"
    return None


def _event_time(group_col: str, order_cols: Sequence[str]) -> "Column":
    """The closing group's event time at each record (inclusive running max, from 0)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    running = (Window.partitionBy(group_col).orderBy(*order_cols)
               .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return F.greatest(F.lit(0).cast("long"), F.max("ts").over(running))


def _final_event_time(group_col: str) -> "Column":
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    return F.greatest(F.lit(0).cast("long"), F.max("ts").over(Window.partitionBy(group_col)))


def _aggregate(aggregation: str, value: str = "value") -> "Column":
    from pyspark.sql import functions as F

    if aggregation == "sum":
        return F.sum(value)
    if aggregation == "count":
        return F.count(value)
    if aggregation == "mean":
        return F.avg(F.col(value).cast("double"))
    if aggregation == "min":
        return F.min(value)
    if aggregation == "max":
        return F.max(value)
    raise ValueError(f"aggregation {aggregation!r} has no native form")


def _window_starts(spec: "WindowSpec") -> "Column":
    """Array of the starts of every fixed window holding ``ts`` (the edge's ``window_ranges``)."""
    from pyspark.sql import functions as F

    ts = F.col("ts")
    duration = F.lit(spec.duration_ms).cast("long")
    if spec.step_ms is None:
        # tumbling: one window; Python's floor modulo, as the edge computes it (negative ts too)
        return F.array(ts - F.pmod(ts, duration))
    step = F.lit(spec.step_ms).cast("long")
    newest = ts - F.pmod(ts, step)
    # the oldest start is the smallest multiple of step above ts - duration, and at least 0
    oldest = F.greatest(F.lit(0).cast("long"), ts - duration - F.pmod(ts - duration, step) + step)
    return F.when(newest >= oldest, F.sequence(oldest, newest, step)).otherwise(F.array().cast("array<bigint>"))


def native_fixed_windows(data: "DataFrame", spec: "WindowSpec", order_cols: Sequence[str],
                         group_col: str) -> "DataFrame":
    """Tumbling or hopping ``final()`` rows of ``data`` (columns ``key``, ``ts``, ``value``, the order
    columns): ``key``, ``window_start``, ``window_end``, ``value``.

    ``group_col`` is ``key`` (per-key closing) or the Kafka partition column (per-partition).
    """
    from pyspark.sql import functions as F

    reason = native_unsupported_reason(spec)
    if reason:
        raise ValueError(f"the native path cannot compute {reason}")
    assert isinstance(spec.aggregation, str)
    closed_below = spec.grace_ms + spec.duration_ms  # a window is closed when start <= latest - this
    # event times first, on the records; only then one row per (record, window): a hopping window
    # multiplies the rows, and the sort by offset must not see the copies
    timed = data.select(
        "key", "value", "ts", F.col(group_col).alias("__group"),
        (_event_time(group_col, order_cols) - closed_below).alias("__closed_upto"),
        (_final_event_time(group_col) - closed_below).alias("__final_closed_upto"),
    ).where(F.col("ts") - spec.duration_ms < F.col("__final_closed_upto"))  # else no window of it is emitted
    staged = timed.select("key", "value", "__group", "__closed_upto", "__final_closed_upto",
                          F.explode(_window_starts(spec)).alias("window_start"))
    kept = staged.where((F.col("window_start") > F.col("__closed_upto"))
                        & (F.col("window_start") <= F.col("__final_closed_upto")))
    grouped = kept.groupBy("__group", "key", "window_start").agg(_aggregate(spec.aggregation).alias("value"))
    return grouped.select("key", "window_start", (F.col("window_start") + spec.duration_ms).alias("window_end"),
                          "value")


def sliding_key_flags(data: "DataFrame", spec: "WindowSpec", order_cols: Sequence[str]) -> "DataFrame":
    """``data`` with ``__final`` (the key's final event time), ``__accepted`` (the edge keeps the
    record) and ``__native`` (the key's sliding windows have the closed form: no accepted record
    inside an already-closed window, every accepted timestamp above ``2 * duration + grace``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    latest = _event_time("key", order_cols)
    ts = F.col("ts")
    dropped_upto = F.col("__latest") - spec.duration_ms - spec.grace_ms - 1
    accepted = ts > dropped_upto
    awkward = accepted & ((ts <= F.col("__latest") - spec.grace_ms - 1)
                          | (ts <= 2 * spec.duration_ms + spec.grace_ms))
    flagged = data.withColumn("__latest", latest).withColumn("__accepted", accepted)
    per_key = Window.partitionBy("key")
    return (flagged.withColumn("__native", F.max(F.when(awkward, 1).otherwise(0)).over(per_key) == 0)
            .withColumn("__final", _final_event_time("key")))


def native_sliding_windows(flagged: "DataFrame", spec: "WindowSpec") -> "DataFrame":
    """Sliding ``final()`` rows of the keys :func:`sliding_key_flags` marked native."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    reason = native_unsupported_reason(spec)
    if reason:
        raise ValueError(f"the native path cannot compute {reason}")
    aggregation = spec.aggregation
    assert isinstance(aggregation, str)
    rows = flagged.where("__native")
    # one row per (key, accepted timestamp) with partial aggregates; a RANGE frame adds them up
    # (the data stays partitioned by key from the flags' window: no further shuffle)
    partial: list[Any] = [F.max("__final").alias("__final")]
    if aggregation in ("sum", "mean"):
        partial.append(F.sum("value").alias("__sum"))
    if aggregation in ("count", "mean"):
        partial.append(F.count("value").alias("__n"))
    if aggregation == "min":
        partial.append(F.min("value").alias("__min"))
    if aggregation == "max":
        partial.append(F.max("value").alias("__max"))
    per_ts = rows.where("__accepted").groupBy("key", "ts").agg(*partial)
    frame = Window.partitionBy("key").orderBy("ts").rangeBetween(-spec.duration_ms, 0)
    if aggregation == "sum":
        value = F.sum("__sum").over(frame)
    elif aggregation == "count":
        value = F.sum("__n").over(frame)
    elif aggregation == "mean":
        value = F.sum(F.col("__sum").cast("double")).over(frame) / F.sum("__n").over(frame)
    elif aggregation == "min":
        value = F.min("__min").over(frame)
    else:
        value = F.max("__max").over(frame)
    windows = per_ts.select("key", "ts", "__final", value.alias("value"))
    emitted = windows.where(F.col("ts") <= F.col("__final") - spec.grace_ms - 1)
    return emitted.select("key", F.greatest(F.lit(0).cast("long"), F.col("ts") - spec.duration_ms)
                          .alias("window_start"), F.col("ts").alias("window_end"), "value")

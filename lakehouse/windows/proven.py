"""Proven plans: the windows of a full run computed as if no record were late, with a proof per key.

The exact native plans (:mod:`lakehouse.windows.native`) follow each record's arrival: a running
maximum in Kafka offset order tells whether the record's window was already closed when it came.
That costs a sort of every record by offset and a window operator over it (sliding windows then
sort every record a second time, by timestamp). Most streams never drop a record: lateness stays
within the grace period. For them the windows are a plain function of the records' timestamps,
and these plans compute exactly that, much more cheaply, *together with a certificate* that no
record of the key was dropped or placed awkwardly. The rows of a group (a key within its Kafka
partition) whose certificate fails are left out, and the exact plan computes that group before
the run publishes anything (the ``proven-then-patch`` strategy, :mod:`lakehouse.windows.strategy`):
the certificate only decides which plan computes a group, never what a window holds.

**Fixed windows** (tumbling, hopping; closing per key). Records are aggregated per key and
*bucket* of ``g`` ms (``g`` = the step, or the gcd of step and duration: every record of a bucket
belongs to the same windows), one hash aggregation and no sort of the records. A record ``r`` in
bucket ``b`` is dropped from its oldest window ``[s, s + duration)`` exactly when some record
before it in offset order has a timestamp ``>= s + duration + grace`` (the edge's event time
starts at 0, so also when that bound is ``<= 0``); since ``s >= b + g - duration``, no record
before ``r`` with a timestamp ``>= b + g + grace`` proves that ``r`` is dropped from none of its
windows. Per bucket: its largest offset must be below the smallest offset of every record at or
above that timestamp, found by two range frames over the (few) bucket rows in descending
timestamp order. The edge's event time at the end of the data is the largest timestamp (the
record holding it is never dropped), so emission needs no offset order either.

**Sliding windows**. One sort per key by descending timestamp and one window operator: each
timestamp's window ``[t - duration, t]`` is a range frame, and the record is proven on time when no
record before it in offset order is more than ``grace`` ms newer (``min(offset)`` over the
timestamps ``>= ts + grace + 1``, a growing frame) and it lies above ``2 * duration + grace``; with
min/max of floating values, also not NaN. Then the edge accepts every record, none lands in an
already-closed window, and the closed form (:mod:`lakehouse.windows.native`) is exact.

Both observe what the full run's report and window state need (``groups``, ``state_floor``,
``stale_groups``, as the exact plans do), ``unproven`` (the groups that failed, counted in the
same pass: a frame over the group) and ``unproven_groups`` (their columns).

Example::

    rows = proven_fixed_windows(data, grouping, observation)   # the proven groups' rows
    observation.get["unproven_groups"]                         # after the rows were written
"""

from __future__ import annotations

from math import gcd
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.windows.definition import Grouping, WindowSpec, quote_column
from lakehouse.windows.native import (kept_columns, merge_sql, nan_aware, native_unsupported_reason, partials,
                                      with_group_hash)
from stream_edge.dataframe.windows import rules
from stream_edge.dataframe.windows.rules import Sql

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ("provable", "proven_fixed_windows", "proven_sliding_windows")


def provable(grouping: Grouping) -> bool:
    """Whether a proven plan exists: a native aggregation, windows closing per key (closing per
    partition, a key's windows close on the other keys' records too) and some order column
    outside the group (the offset)."""
    spec, order_cols, group_cols = grouping
    return (native_unsupported_reason(spec) is None and "key" in group_cols
            and any(c not in group_cols for c in order_cols))


def _position(group_cols: Sequence[str], order_cols: Sequence[str]) -> str:
    """A record's position within its group as SQL: the offset, or a struct of the order columns
    outside the group (compared field by field)."""
    rest = [quote_column(c) for c in order_cols if c not in group_cols]
    return rest[0] if len(rest) == 1 else f"struct({', '.join(rest)})"


def _partition(group_cols: Sequence[str]) -> str:
    return f"PARTITION BY {', '.join(map(quote_column, ['__gh', *group_cols]))}"


def _bucket_ms(spec: WindowSpec) -> int:
    """The bucket width: every record of a bucket is in the same windows."""
    return spec.duration_ms if spec.step_ms is None else gcd(spec.step_ms, spec.duration_ms)


def _fixed_buckets(data: "DataFrame", grouping: Grouping) -> "DataFrame":
    """Per key and bucket: the value's partial aggregates and the certificate's ``__unproven``,
    ``__final`` (the group's event time at the end of the data), ``__first_bucket`` and what the
    window state's figures need."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    assert isinstance(spec.aggregation, str)
    g, grace = _bucket_ms(spec), spec.grace_ms
    rest_ms, hops = grace % g, grace // g
    kept = kept_columns(group_cols)
    position = _position(group_cols, order_cols)
    positions = [c for c in order_cols if c not in group_cols] if nan_aware(spec, data.schema["value"].dataType) else []
    bucketed = with_group_hash(data, group_cols).selectExpr(
        *map(quote_column, kept), *map(quote_column, positions), "value", "ts",
        f"{rules.window_start(Sql('ts'), g)} AS __b", f"{position} AS __pos")
    parts = bucketed.groupBy(*kept, "__b").agg(
        *partials(spec.aggregation, positions), F.expr("min(__pos) AS __min_pos"),
        F.expr(f"min(CASE WHEN ts >= __b + {rest_ms} THEN __pos END) AS __min_rest"),
        F.expr("max(__pos) AS __max_pos"), F.expr("max(ts) AS __max_ts"), F.expr("max_by(ts, __pos) AS __last_ts"))
    desc = f"({_partition(group_cols)} ORDER BY __b DESC"
    whole = f"{desc} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    # records at or above b + g + grace: those of the bucket holding that time from its offset on
    # (min_rest), and every record of the buckets after it (min_pos)
    framed = parts.selectExpr(
        "*", f"min(__min_pos) OVER {desc} RANGE BETWEEN UNBOUNDED PRECEDING AND {g * (hops + 2)} PRECEDING) AS __later",
        f"min(__min_rest) OVER {desc} RANGE BETWEEN {g * (hops + 1)} PRECEDING AND {g * (hops + 1)} PRECEDING)"
        " AS __next",
        f"max(__max_ts) OVER {whole} AS __group_max_ts",
        f"max(__max_pos) OVER {whole} AS __group_last_pos",
        f"row_number() OVER ({_partition(group_cols)} ORDER BY __b DESC) = 1 AS __first_bucket")
    # the bucket's oldest window (start >= b + g - duration) closed at event time 0 already
    at_start = Sql("__b") + (g - spec.duration_ms) <= rules.closed_upto(rules.EVENT_TIME_START, spec)
    flagged = framed.selectExpr(
        "*", f"{rules.event_time(Sql('__group_max_ts'))} AS __final",
        f"({at_start} OR coalesce(__max_pos > __later, false) OR coalesce(__max_pos > __next, false))"
        " AS __unproven")
    return _with_group_flag(flagged, group_cols, "__b")


def proven_fixed_windows(data: "DataFrame", grouping: Grouping, observation: Any) -> "DataFrame":
    """Tumbling or hopping ``final()`` rows (``__gh``, ``key``, ``window_start``, ``window_end``,
    ``value``) of the proven groups (as if no record were dropped: right for them);
    ``observation`` receives ``unproven``, ``unproven_groups``, ``groups``, ``state_floor`` and
    ``stale_groups``."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    buckets = _fixed_buckets(data, grouping)
    emitted_upto = rules.closed_upto(Sql("__final"), spec)  # final() emits a window starting at or below it
    bound = F.expr(str(emitted_upto))
    stale = ((F.col("__max_pos") == F.col("__group_last_pos"))
             & ((F.col("__last_ts") <= bound) | (F.col("__group_max_ts") <= bound)))
    buckets = buckets.observe(observation, *_observations(group_cols, F.col("__first_bucket")),
                              F.min(bound).alias("state_floor"), F.count(F.when(stale, 1)).alias("stale_groups"))
    buckets = buckets.where("NOT __group_unproven")
    merge = merge_sql(spec, data.schema["value"].dataType)
    kept = kept_columns(group_cols)
    if spec.step_ms is None:  # a bucket is a tumbling window
        rows = buckets.where(f"__b <= {emitted_upto}").selectExpr(
            "__gh", "key", "__b AS window_start", f"{merge[1]} AS value")
    else:
        step = spec.step_ms
        oldest = rules.oldest_start(Sql("__b"), spec.duration_ms, step)
        newest = rules.at_most(rules.window_start(Sql("__b"), step), rules.window_start(emitted_upto, step))
        starts = buckets.where(f"{oldest} <= {newest}").selectExpr(
            "*", f"explode(sequence({oldest}, {newest}, CAST({step} AS BIGINT))) AS window_start")
        rows = starts.groupBy(*kept, "window_start").agg(F.expr(f"{merge[0]} AS value"))
    return rows.selectExpr("__gh", "key", "window_start", f"window_start + {spec.duration_ms} AS window_end", "value")


def _sliding_frames(data: "DataFrame", grouping: Grouping) -> "DataFrame":
    """Every record with its window's value (``__window_value``), ``__unproven``, ``__final`` and
    the flags the emission and the observation need: one sort by descending timestamp."""
    spec, order_cols, group_cols = grouping
    assert isinstance(spec.aggregation, str)
    duration = spec.duration_ms
    desc = f"({_partition(group_cols)} ORDER BY ts DESC"
    frame = f"{desc} RANGE BETWEEN CURRENT ROW AND {int(duration)} FOLLOWING)"
    value = rules.frame_aggregate_sql(spec.aggregation, frame)
    # how much newer a record must be for the window ending at ts to be closed at its arrival
    newer = -rules.sliding_emitted_upto(0, spec)
    whole = f"{desc} ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    position = _position(group_cols, order_cols)
    framed = with_group_hash(data, group_cols).selectExpr(
        "__gh", *map(quote_column, [c for c in group_cols if c != "key"]), "key", "ts", "value", f"{position} AS __pos",
        f"{value} AS __window_value", f"lag(ts) OVER {desc}) AS __newer_ts",
        # the first record (in offset order) among those more than grace newer than this one
        f"min({position}) OVER {desc} RANGE BETWEEN UNBOUNDED PRECEDING AND {newer} PRECEDING) AS __newer_first",
        f"max(ts) OVER {whole} AS __final", f"max({position}) OVER {whole} AS __group_last_pos")
    awkward = f"coalesce(__newer_first < __pos, false) OR {Sql('ts') <= rules.sliding_plain_floor(spec)}"
    if nan_aware(spec, data.schema["value"].dataType):
        awkward += " OR isnan(value)"
    return _with_group_flag(framed.selectExpr("*", f"({awkward}) AS __unproven"), group_cols, "ts")


def proven_sliding_windows(data: "DataFrame", grouping: Grouping, observation: Any) -> "DataFrame":
    """Sliding ``final()`` rows (``__gh``, ``key``, ``window_start``, ``window_end``, ``value``) of
    the closed form, of the proven groups; ``observation`` receives ``unproven``,
    ``unproven_groups``, ``groups``, ``state_floor`` and ``stale_groups``."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    framed = _sliding_frames(data, grouping)
    bound = F.expr(str(rules.closed_upto(Sql("__final"), spec)))
    stale = (F.col("__pos") == F.col("__group_last_pos")) & (F.col("ts") <= bound)
    framed = framed.observe(observation, *_observations(group_cols, F.col("__newer_ts").isNull()),
                            F.min(bound).alias("state_floor"), F.count(F.when(stale, 1)).alias("stale_groups"))
    # peers (records of one timestamp) share a frame: the first of them in descending order is kept
    emitted = framed.where(f"NOT __group_unproven AND (__newer_ts IS NULL OR __newer_ts <> ts) AND "
                           f"{Sql('ts') <= rules.sliding_emitted_upto(Sql('__final'), spec)}")
    return emitted.selectExpr("__gh", "key", f"{rules.sliding_start(Sql('ts'), spec.duration_ms)} AS window_start",
                              "ts AS window_end", "__window_value AS value")


def _with_group_flag(flagged: "DataFrame", group_cols: Sequence[str], order: str) -> "DataFrame":
    """``flagged`` with ``__group_unproven``: some row of its group failed the certificate. A
    frame over the whole group in the order the rows are already sorted in: no sort of its own."""
    whole = f"({_partition(group_cols)} ORDER BY {order} DESC ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)"
    return flagged.selectExpr("*", f"max(__unproven) OVER {whole} AS __group_unproven")


def _observations(group_cols: Sequence[str], first: "Column") -> list["Column"]:
    """``groups`` (``first``: the group's first row), and the groups whose certificate failed:
    ``unproven`` (how many) and ``unproven_groups`` (their columns: the exact plan computes them)."""
    from pyspark.sql import functions as F

    failed = first & F.col("__group_unproven")
    group = F.struct(*[F.col(c) for c in group_cols])
    return [F.count(F.when(first, 1)).alias("groups"), F.count(F.when(failed, 1)).alias("unproven"),
            F.collect_list(F.when(failed, group)).alias("unproven_groups")]

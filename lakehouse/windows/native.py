"""The ``native`` plan: the edge's ``final()`` rows from Spark's DataFrame/SQL operators only.

The ``python-engine`` plan (:mod:`lakehouse.windows.engine`) feeds each group's records through
the edge's engines one by one. Here the same rows come from window functions and aggregations
that Spark runs in the JVM, with no Python per row. Every window rule comes from the rule book
(``stream_edge.dataframe.windows.rules``) as SQL text; this module only arranges them:

* **Event time** of a record: ``rules.event_time`` of the running ``max(ts)`` of its closing
  group (the key within its Kafka partition, or the Kafka partition with ``closing="partition"``)
  in Kafka offset order, the record included.
* **Tumbling / hopping**: a record goes into each window holding it (``rules.window_start`` down
  to ``rules.oldest_start``) unless it was closed at its arrival (``rules.closed_upto``). Once
  closed a window never reopens (event time only grows), so a window's content is exactly its
  non-late records, whatever their order; ``final()`` emits the windows closed at the end.
* **Sliding** (per key): the records not late at arrival; each accepted timestamp ``t`` ends one
  result window (a ``RANGE`` frame over the timestamps, ``rules.frame_aggregate_sql``), emitted
  up to ``rules.sliding_emitted_upto`` of the final event time. That closed form equals the
  edge's incremental algorithm for keys whose accepted records never land in an already-closed
  window and lie above ``rules.sliding_plain_floor`` (:func:`sliding_key_flags`); other keys are
  replayed through the edge's engines by the plan.
* **NaN** (``rules.nan_aware``): the fixed windows' value is NaN when the window's first record
  (in offset order) is NaN, else the ``min``/``max`` of its other values; a sliding key with a
  NaN value is replayed through the engines.

Floating-point sums and means add the same numbers in a different order than the edge, so they
may differ in the last bits (the parity tests compare them with a relative tolerance of 1e-9);
integer results are exact.

Example::

    rows = native_fixed_windows(data, Grouping(spec, order_cols=["__order_0", "__order_1"],
                                               group_cols=["__order_0", "key"]))
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.windows.definition import Grouping, WindowSpec, quote_column
from stream_edge.dataframe.windows import rules
from stream_edge.dataframe.windows.rules import Sql

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ("native_unsupported_reason", "fixed_event_times", "fixed_window_parts", "group_hash", "kept_columns",
           "merge_sql", "native_fixed_windows", "native_sliding_windows", "nan_aware", "partials",
           "sliding_key_flags", "sliding_tail_flags", "with_group_hash")


def native_unsupported_reason(spec: WindowSpec) -> str | None:
    """None when ``spec`` is expressible natively, else why not (custom aggregations)."""
    return None if spec.native else f"custom aggregation {type(spec.aggregation).__name__}"


def _hash_sql(group_cols: Sequence[str]) -> str:
    return rules.group_hash_sql(list(map(quote_column, group_cols)))


def group_hash(group_cols: Sequence[str]) -> "Column":
    """``rules.group_hash_sql`` of the group's columns, as a column (``__gh``)."""
    from pyspark.sql import functions as F

    return F.expr(_hash_sql(group_cols))


def nan_aware(spec: WindowSpec, value_type: Any) -> bool:
    """Whether the plan follows the edge's NaN rule (``rules.nan_aware``)."""
    from pyspark.sql import types as T

    return rules.nan_aware(spec.aggregation, isinstance(value_type, (T.FloatType, T.DoubleType)))


def _positions(grouping: Grouping, data: "DataFrame") -> list[str]:
    """The order columns a NaN-aware plan carries to tell a window's first record (those not
    constant within the group); none otherwise."""
    spec, order_cols, group_cols = grouping
    if not nan_aware(spec, data.schema["value"].dataType):
        return []
    return [c for c in order_cols if c not in kept_columns(group_cols)]


def partials(aggregation: str, order_cols: Sequence[str] = ()) -> list["Column"]:
    """``rules.partial_sql`` as columns; ``order_cols`` (NaN-aware min/max): the record's position.
    One column as itself: a struct buffer makes Spark aggregate by sorting (SortAggregate: two
    more sorts of every record in the hopping plan), a long one hashes."""
    from pyspark.sql import functions as F

    position = None
    if order_cols:
        position = (quote_column(order_cols[0]) if len(order_cols) == 1
                    else f"struct({', '.join(map(quote_column, order_cols))})")
    return [F.expr(part) for part in rules.partial_sql(aggregation, position)]


def merge_sql(spec: WindowSpec, value_type: Any) -> tuple[str, str]:
    """``rules.merge_sql`` of ``spec``'s aggregation for values of ``value_type``."""
    assert isinstance(spec.aggregation, str)
    return rules.merge_sql(spec.aggregation, nan_aware(spec, value_type))


def with_group_hash(data: "DataFrame", group_cols: Sequence[str]) -> "DataFrame":
    return data if "__gh" in data.columns else data.selectExpr("*", f"{_hash_sql(group_cols)} AS __gh")


def kept_columns(group_cols: Sequence[str]) -> list[str]:
    """``__gh``, the group's columns and ``key`` (once)."""
    return ["__gh", *group_cols] + ([] if "key" in group_cols else ["key"])


# The fixed windows' plan is written as SQL text: each column expression built in Python is a
# round trip to the JVM (a ``Column`` per ``F.col``, literal, operator and alias: ~500 of them for
# this plan), which an incremental run pays on its critical path; a ``selectExpr`` is one.
_RUNNING = " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
_WHOLE = " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


def _over(group_cols: Sequence[str], order_cols: Sequence[str], frame: str = "") -> str:
    """The SQL window of the closing group (its hash first) in offset order, with ``frame``."""
    return (f"(PARTITION BY {', '.join(map(quote_column, ['__gh', *group_cols]))} "
            f"ORDER BY {', '.join(map(quote_column, order_cols))}{frame})")


def fixed_event_times(data: "DataFrame", grouping: Grouping, observation: Any = None) -> "DataFrame":
    """Stage 1 of the fixed windows: each record (``__gh``, the group's columns, ``key``,
    ``value``, ``ts``) with the bound at or below which its group's windows are closed when it
    arrives (``__closed_upto``; at least ``__closed_floor`` when ``data`` has that column) and at
    the end of the data (``__final_closed_upto``). Records none
    of whose windows is emitted are left out. One shuffle by the group and one sort by offset; both
    windows share them. ``observation`` (a ``pyspark.sql.Observation``) receives ``groups``."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    running = _over(group_cols, order_cols, _RUNNING)
    closed_upto = rules.closed_upto(rules.event_time(Sql(f"max(ts) OVER {running}")), spec)
    if "__closed_floor" in data.columns:  # an incremental run: windows up to it were emitted before
        closed_upto = rules.at_least(closed_upto, Sql("__closed_floor"))
    final = rules.closed_upto(rules.event_time(Sql(f"max(ts) OVER {_over(group_cols, order_cols, _WHOLE)}")), spec)
    # every window function here shares the offset order, so one window operator computes them all
    positions = _positions(grouping, data)
    columns = [*map(quote_column, kept_columns(group_cols)), *map(quote_column, positions), "value", "ts",
               f"{closed_upto} AS __closed_upto", f"{final} AS __final_closed_upto",
               f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group"]
    hashed = with_group_hash(data, group_cols)
    if observation is None:
        timed = hashed.selectExpr(*columns)
    else:  # the full run: what the group count and the window state need, observed
        timed = hashed.selectExpr(*columns, *_state_columns(group_cols, order_cols))
        timed = timed.observe(observation, *_state_observations(spec))
    # else no window of the record is emitted (every window holding it starts above ts - duration)
    kept = timed.where(str(Sql("ts") - spec.duration_ms < Sql("__final_closed_upto")))
    return kept.drop("__first_of_group", "__is_last", "__max_ts")


def _state_columns(group_cols: Sequence[str], order_cols: Sequence[str]) -> list[str]:
    """What :func:`_state_observations` needs per record, as SQL."""
    whole = _over(group_cols, order_cols, _WHOLE)
    return [f"row_number() OVER {_over(group_cols, order_cols)} = count(1) OVER {whole} AS __is_last",
            f"max(ts) OVER {whole} AS __max_ts"]


def _state_observations(spec: WindowSpec) -> list["Column"]:
    """The observed ``groups``, ``late`` (records dropped from their oldest window: closed at their
    arrival), and what the per-group window state written after a full run
    (:func:`lakehouse.window_state.full_state`) can take from this pass instead of a scan of its
    own: ``state_floor``, the smallest per-group bound ``latest - grace - duration`` (the state
    holds each group's records above its bound), and ``stale_groups``, the groups whose last
    record in offset order or newest record lies at or below their bound. Without stale groups
    the records above ``state_floor`` hold every group's newest and last record, so the state
    comes from them alone (a scan that Iceberg prunes to the newest files)."""
    from pyspark.sql import functions as F

    bound = F.col("__final_closed_upto")
    stale = F.col("__is_last") & ((F.col("ts") <= bound) | (F.col("__max_ts") <= bound))
    step = spec.step_ms or spec.duration_ms  # a record with a window (oldest <= newest) whose oldest had closed
    late = rules.oldest_start(Sql("ts"), spec.duration_ms, step) <= rules.at_most(Sql("__closed_upto"),
                                                                                rules.window_start(Sql("ts"), step))
    return [F.sum("__first_of_group").alias("groups"), F.min(bound).alias("state_floor"),
            F.count(F.when(stale, 1)).alias("stale_groups"), F.count(F.when(F.expr(str(late)), 1)).alias("late")]


def fixed_window_parts(timed: "DataFrame", grouping: Grouping) -> "DataFrame":
    """Stage 2 of the fixed windows: rows of the group's columns, ``key``, ``__first``, ``__last``
    and partial aggregates: the records whose kept windows are the starts ``__first``,
    ``__first + step``, ... ``__last``, aggregated together.

    A tumbling record has one window (``__first == __last``), kept or not. A hopping record is kept
    by a suffix of its windows (those opening after its group's bound when it arrives) up to the
    last one ``final()`` emits; records with the same range are aggregated *before* the range is
    expanded, so the expansion multiplies a few partial rows per key and step, not every record.
    """
    spec, order_cols, group_cols = grouping
    assert isinstance(spec.aggregation, str)
    ts = Sql("ts")
    if spec.step_ms is None:  # tumbling: one window
        first = last = rules.window_start(ts, spec.duration_ms)
    else:
        step = spec.step_ms
        # the first window open at the record's arrival; the last one final() emits
        first = rules.at_least(rules.oldest_start(ts, spec.duration_ms, step),
                               rules.window_start(Sql("__closed_upto"), step) + step)
        last = rules.at_most(rules.window_start(ts, step), rules.window_start(Sql("__final_closed_upto"), step))
    kept_cols = kept_columns(group_cols)
    positions = _positions(grouping, timed)
    ranged = timed.selectExpr(*map(quote_column, kept_cols), *map(quote_column, positions), "value",
                              f"{first} AS __first", f"{last} AS __last",
                              "__closed_upto", "__final_closed_upto")
    kept = ranged.where("__first > __closed_upto AND __first <= __last AND __last <= __final_closed_upto")
    return kept.groupBy(*kept_cols, "__first", "__last").agg(*partials(spec.aggregation, positions))


def native_fixed_windows(data: "DataFrame", grouping: Grouping, observation: Any = None) -> "DataFrame":
    """Tumbling or hopping ``final()`` rows of ``data`` (columns ``key``, ``ts``, ``value``, the order
    columns): ``__gh``, ``key``, ``window_start``, ``window_end``, ``value``.

    ``group_cols`` are the Kafka partition column and ``key`` (per-key closing: the edge keeps
    state per partition and key) or the partition column alone (per-partition closing).
    Stages: :func:`fixed_event_times`, :func:`fixed_window_parts`, then one aggregation per window.
    Every step after the first shuffle groups by columns that include the group, so Spark keeps
    the data where the shuffle put it (no second exchange).
    """
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    reason = native_unsupported_reason(spec)
    if reason:
        raise ValueError(f"the native path cannot compute {reason}")
    assert isinstance(spec.aggregation, str)
    parts = fixed_window_parts(fixed_event_times(data, grouping, observation), grouping)
    merge = merge_sql(spec, data.schema["value"].dataType)
    if spec.step_ms is None:  # one window per record: the parts are the windows already
        grouped = parts.selectExpr("__gh", "key", "__first AS window_start", f"{merge[1]} AS value")
    else:
        starts = parts.selectExpr("*", f"explode(sequence(__first, __last, CAST({spec.step_ms} AS BIGINT))) "
                                       "AS window_start")
        grouped = (starts.groupBy(*kept_columns(group_cols), "window_start")
                   .agg(F.expr(f"{merge[0]} AS value")))
    return grouped.selectExpr("__gh", "key", "window_start", f"window_start + {spec.duration_ms} AS window_end",
                              "value")


def sliding_key_flags(data: "DataFrame", grouping: Grouping, observation: Any = None,
                      per_group: bool = True) -> "DataFrame":
    """``data`` with ``__gh``, ``__final`` (the group's final event time), ``__accepted`` (the edge
    keeps the record) and ``__native`` (the group's sliding windows have the closed form: no
    accepted record inside an already-closed window, every accepted timestamp above
    ``2 * duration + grace``, and for min/max no NaN value). A group is a key (with its Kafka
    partition when ``group_cols`` holds it). ``per_group=False``: each record's ``__awkward``
    instead of ``__native``, which :func:`native_sliding_windows` folds over the group in its own
    window operator (one pass over every record fewer).

    ``observation`` receives ``groups``, ``late`` (records not accepted), ``replayed`` (groups not
    native; with ``per_group``) and what the window state of a full run can take from this pass
    (``state_floor`` and ``stale_groups`` as in :func:`_state_observations`: a group whose newest
    record is at or below its bound has its last one there too, so it is stale whether or not it
    was replayed)."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    awkward = _sliding_awkward(spec, data.schema["value"].dataType, "__latest")
    running = _over(group_cols, order_cols, _RUNNING)
    whole = _over(group_cols, order_cols, _WHOLE)
    # every frame here shares the offset order: one window operator (the fold of the awkward
    # records over the group needs the running event time, so it is another one's)
    flagged = with_group_hash(data, group_cols).selectExpr(
        "*", f"{rules.event_time(Sql(f'max(ts) OVER {running}'))} AS __latest",
        f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group",
        f"{rules.event_time(Sql(f'max(ts) OVER {whole}'))} AS __final",
        *([f"count(1) OVER {whole} AS __rows", f"row_number() OVER {_over(group_cols, order_cols)} AS __row"]
          if observation is not None else []))
    flagged = flagged.selectExpr("*", f"{_accepted(spec, '__latest')} AS __accepted", f"{awkward} AS __awkward")
    if per_group:
        flagged = flagged.selectExpr("*", f"max(CAST(__awkward AS INT)) OVER {whole} = 0 AS __native").drop("__awkward")
    if observation is not None:
        metrics = [F.sum("__first_of_group").alias("groups"), F.count(F.when(~F.col("__accepted"), 1)).alias("late")]
        if per_group:
            metrics.append(F.sum(F.when(~F.col("__native"), F.col("__first_of_group")).otherwise(0)).alias("replayed"))
        bound = F.expr(str(rules.closed_upto(Sql("__final"), spec)))
        stale = (F.col("__row") == F.col("__rows")) & (F.col("ts") <= bound)  # the last record in offset order
        metrics += [F.min(bound).alias("state_floor"), F.count(F.when(stale, 1)).alias("stale_groups")]
        flagged = flagged.observe(observation, *metrics)
    return flagged.drop("__first_of_group", "__rows", "__row", "__latest")


def _accepted(spec: WindowSpec, latest: str) -> Sql:
    """SQL: the record (event time ``latest`` at its arrival) is not late."""
    return Sql("ts") > rules.closed_upto(Sql(latest), spec)


def _sliding_awkward(spec: WindowSpec, value_type: Any, latest: str) -> str:
    """SQL: the record (event time ``latest`` at its arrival) keeps its group off the closed form:
    accepted, and inside an already-closed window or near time 0 (or NaN under min/max)."""
    ts = Sql("ts")
    closed = f"{ts <= rules.sliding_emitted_upto(Sql(latest), spec)} OR {ts <= rules.sliding_plain_floor(spec)}"
    awkward = f"({_accepted(spec, latest)} AND ({closed}))"
    if nan_aware(spec, value_type):  # the edge's NaN rule: through its engines
        awkward = f"({awkward} OR isnan(value))"
    return awkward


def sliding_tail_flags(records: "DataFrame", grouping: Grouping, observation: Any = None) -> "DataFrame":
    """An increment's sliding records in the form :func:`native_sliding_windows` takes, for the
    groups that end their old data on the closed form (the others, marked ``replayed`` in the
    window state, are left out by the tail).

    ``records`` (:func:`lakehouse.windows.tail.tail_records` with ``keep_new``): a tail group's old
    records newer than ``E_old - duration - grace - 1`` (``E_old``: its event time at the end of
    the old data; every one of them was accepted) and its new ones (``__new``). A new record's
    event time at arrival is ``E_old`` or a newer timestamp of the group before it. The windows
    ``final()`` adds are those ending after ``E_old - grace - 1`` (the old ones are emitted and
    never change: a non-awkward new record lies after them), made of these records only (a
    window ``[t - duration, t]`` with ``t >= E_old - grace`` starts at or after the oldest).
    A group with an awkward new record is left out (``__native`` false) and counted in
    ``observation`` (``awkward``; None: not observed): the run replaces its key instead."""
    spec, order_cols, group_cols = grouping
    from pyspark.sql import functions as F

    # the group's event time at the end of the old data (__closed_floor is closed_upto of it)
    old_latest = Sql(f"coalesce(__closed_floor + {spec.closing_lag_ms}, CAST({rules.EVENT_TIME_START} AS BIGINT))")
    running = _over(group_cols, order_cols, _RUNNING)
    whole = _over(group_cols, order_cols, _WHOLE)
    timed = records.selectExpr(
        "*", f"{rules.at_least(Sql(f'max(ts) OVER {running}'), old_latest)} AS __latest",
        f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group")
    awkward = _sliding_awkward(spec, records.schema["value"].dataType, "__latest")
    flagged = timed.selectExpr(
        "*", f"(NOT __new OR {_accepted(spec, '__latest')}) AS __accepted",
        f"max(CASE WHEN __new AND {awkward} THEN 1 ELSE 0 END) OVER {whole} = 0 AS __native",
        f"{rules.at_least(Sql(f'max(ts) OVER {whole}'), old_latest)} AS __final",
        f"{rules.sliding_emitted_upto(old_latest, spec)} AS __emitted_upto")
    if observation is not None:
        flagged = flagged.observe(observation, F.expr("sum(CASE WHEN NOT __native THEN __first_of_group ELSE 0 END)"
                                                      " AS awkward"))
    return flagged.drop("__first_of_group", "__new")


def native_sliding_windows(flagged: "DataFrame", grouping: Grouping, observation: Any = None) -> "DataFrame":
    """Sliding ``final()`` rows (``__gh``, ``key``, ``window_start``, ``window_end``, ``value``) of
    the groups :func:`sliding_key_flags` marked native (``__native``), or, from its records'
    ``__awkward``, of the groups none of whose records is awkward; ``observation`` then receives
    ``replayed`` (the other groups) and ``replayed_keys`` (their keys). With ``__emitted_upto`` (an
    increment), only the windows ending after it.

    One window operator over the accepted records in timestamp order (the data stays partitioned
    by the group: no further shuffle, one sort): a ``RANGE`` frame aggregates each window, ``lead``
    keeps one row per timestamp (peers share the frame), and the awkward records are folded over
    the group."""
    spec, order_cols, group_cols = grouping
    reason = native_unsupported_reason(spec)
    if reason:
        raise ValueError(f"the native path cannot compute {reason}")
    aggregation = spec.aggregation
    assert isinstance(aggregation, str)
    rows = flagged.where("__accepted")
    per_record = "__awkward" in flagged.columns
    if not per_record:
        rows = rows.where("__native")
    by_ts = f"PARTITION BY {', '.join(map(quote_column, ['__gh', *group_cols]))} ORDER BY ts"
    frame = f"({by_ts} RANGE BETWEEN {int(spec.duration_ms)} PRECEDING AND CURRENT ROW)"
    value = rules.frame_aggregate_sql(aggregation, frame)
    increment = "__emitted_upto" in flagged.columns  # windows up to it were emitted before
    columns = ["__gh", "key", "ts", "__final", *(["__emitted_upto"] if increment else []), f"{value} AS value",
               f"lead(ts) OVER ({by_ts}) AS __next_ts"]
    if per_record:
        columns += [f"max(CAST(__awkward AS INT)) OVER ({by_ts}{_WHOLE}) = 0 AS __native",
                    f"row_number() OVER ({by_ts}) = 1 AS __first_ts"]
    windows = rows.selectExpr(*columns)
    if per_record and observation is not None:
        from pyspark.sql import functions as F

        replayed = "CASE WHEN __first_ts AND NOT __native THEN {} END"
        windows = windows.observe(observation, F.expr(f"count({replayed.format(1)}) AS replayed"),
                                  F.expr(f"collect_set({replayed.format('key')}) AS replayed_keys"))
    emitted = windows.where(f"(__next_ts IS NULL OR __next_ts <> ts) AND "
                            f"{Sql('ts') <= rules.sliding_emitted_upto(Sql('__final'), spec)}"
                            + (" AND __native" if per_record else "")
                            + (" AND ts > __emitted_upto" if increment else ""))
    start = f"{rules.sliding_start(Sql('ts'), spec.duration_ms)} AS window_start"
    return emitted.selectExpr("__gh", "key", start, "ts AS window_end", "value")

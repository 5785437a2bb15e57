"""The ``native`` plan: the edge's ``final()`` rows from Spark's DataFrame/SQL operators only.

The ``python-engine`` plan (:mod:`lakehouse.windows.engine`) feeds each group's records through
the edge's engines one by one. Here the same rows come from window functions and aggregations
that Spark runs in the JVM, with no Python per row. The edge's rules
(``stream_edge/dataframe/windows/math.py``), written as SQL expressions:

* **Event time** of a record = the largest timestamp of its closing group (the key within its
  Kafka partition, as the edge keeps state per partition; or the Kafka partition with
  ``closing="partition"``) up to and including the record, in Kafka offset order,
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
  (:func:`sliding_key_flags`); other keys are replayed through the edge's engines by the plan.
* **NaN** (``min``/``max`` of floating values): the edge keeps a window's first value and replaces
  it when ``new < kept`` (``>`` for max), so a window whose first record (in offset order) is NaN
  stays NaN and a later NaN is ignored; Spark's ``min``/``max`` order NaN above every number. The
  fixed windows' expression follows the edge: NaN when the window's first record is NaN
  (``min_by`` over the offsets), else the ``min``/``max`` of its other values; a sliding key with
  a NaN value is replayed through the engines (its windows share values by copying aggregates,
  an order the closed form does not have).

Floating-point sums and means add the same numbers in a different order than the edge, so they
may differ in the last bits (the parity tests compare them with a relative tolerance of 1e-9);
integer results are exact.

Example::

    rows = native_fixed_windows(data, spec, order_cols=["__order_0", "__order_1"],
                                group_cols=["__order_0", "key"])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.windows.definition import WindowSpec, quote_column

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

__all__ = ("NATIVE_AGGREGATIONS", "native_unsupported_reason", "fixed_event_times", "fixed_window_parts",
           "kept_columns", "merge_sql", "native_fixed_windows", "native_sliding_windows", "nan_aware", "partials",
           "sliding_key_flags", "sliding_tail_flags", "step_floor_sql", "with_group_hash")

#: aggregations the native path computes (the rest go through the edge's engines)
NATIVE_AGGREGATIONS = ("sum", "count", "mean", "min", "max")


def native_unsupported_reason(spec: WindowSpec) -> str | None:
    """None when ``spec`` is expressible natively, else why not (custom aggregations)."""
    aggregation = spec.aggregation
    if not isinstance(aggregation, str):
        return f"custom aggregation {type(aggregation).__name__}"
    if aggregation not in NATIVE_AGGREGATIONS:
        return f"aggregation {aggregation}"
    return None


def group_hash(group_cols: Sequence[str]) -> "Column":
    """A 64-bit hash of the closing group, put first in every partitioning and sort: Spark's sort
    compares an 8-byte prefix of the first column first, and keys such as ``sensor-00042`` share
    theirs, so sorting by the key itself falls back to a full comparison almost every time."""
    from pyspark.sql import functions as F

    return F.xxhash64(*group_cols)


def _group_window(group_cols: Sequence[str]) -> Any:
    from pyspark.sql import Window

    return Window.partitionBy("__gh", *group_cols)


def _event_time(group_cols: Sequence[str], order_cols: Sequence[str]) -> "Column":
    """The closing group's event time at each record (inclusive running max, from 0)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    running = (_group_window(group_cols).orderBy(*order_cols)
               .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    return F.greatest(F.lit(0).cast("long"), F.max("ts").over(running))


def _first_of_group(group_cols: Sequence[str], order_cols: Sequence[str]) -> "Column":
    """1 on each group's first record in offset order (summed by an observation: the group count)."""
    from pyspark.sql import functions as F

    return (F.row_number().over(_group_window(group_cols).orderBy(*order_cols)) == 1).cast("int")


def _whole_group(group_cols: Sequence[str], order_cols: Sequence[str] = ()) -> Any:
    """The whole group as a frame; ordered like the offset-order frames when ``order_cols`` are
    given, so Spark evaluates it in the same window operator as them (an unordered window is an
    operator of its own: one more pass that buffers every group)."""
    from pyspark.sql import Window

    if not order_cols:
        return _group_window(group_cols)
    return (_group_window(group_cols).orderBy(*order_cols)
            .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing))


def _final_event_time(group_cols: Sequence[str], order_cols: Sequence[str] = ()) -> "Column":
    from pyspark.sql import functions as F

    return F.greatest(F.lit(0).cast("long"), F.max("ts").over(_whole_group(group_cols, order_cols)))


def nan_aware(spec: WindowSpec, value_type: Any) -> bool:
    """Whether the plan follows the edge's NaN rule (``min``/``max`` of floating values)."""
    from pyspark.sql import types as T

    return spec.aggregation in ("min", "max") and isinstance(value_type, (T.FloatType, T.DoubleType))


def _positions(spec: WindowSpec, data: "DataFrame", group_cols: Sequence[str],
               order_cols: Sequence[str]) -> list[str]:
    """The order columns a NaN-aware plan carries to tell a window's first record (those not
    constant within the group); none otherwise."""
    if not nan_aware(spec, data.schema["value"].dataType):
        return []
    return [c for c in order_cols if c not in kept_columns(group_cols)]


def partials(aggregation: str, order_cols: Sequence[str] = ()) -> list["Column"]:
    """Partial aggregates of ``value`` that :data:`_MERGE_SQL` combines (mean: a sum and a count).
    ``order_cols`` (NaN-aware min/max): the extreme of the numbers, whether the partial's first
    record in offset order is NaN, and that record's position."""
    from pyspark.sql import functions as F

    parts = []
    if aggregation in ("sum", "mean"):
        parts.append("sum(CAST(value AS DOUBLE)) AS __sum" if aggregation == "mean" else "sum(value) AS __sum")
    if aggregation in ("count", "mean"):
        parts.append("count(value) AS __n")
    if aggregation in ("min", "max"):
        if order_cols:
            # one column as itself: a struct buffer makes Spark aggregate by sorting (SortAggregate:
            # two more sorts of every record in the hopping plan), a long one hashes
            position = (quote_column(order_cols[0]) if len(order_cols) == 1
                        else f"struct({', '.join(map(quote_column, order_cols))})")
            parts += [f"{aggregation}(CASE WHEN isnan(value) THEN NULL ELSE value END) AS __{aggregation}",
                      f"min_by(isnan(value), {position}) AS __nan_first", f"min({position}) AS __position"]
        else:
            parts.append(f"{aggregation}(value) AS __{aggregation}")
    return [F.expr(part) for part in parts]


#: per aggregation, the window's value as SQL text: from the partial rows of its records (merged),
#: and from one partial row (a window made of one group of records)
_MERGE_SQL = {"sum": ("sum(__sum)", "__sum"), "count": ("sum(__n)", "__n"),
              "mean": ("sum(__sum) / sum(__n)", "__sum / __n"), "min": ("min(__min)", "__min"),
              "max": ("max(__max)", "__max")}
#: NaN-aware min/max: NaN when the window's first record is NaN (the edge keeps it), else the numbers'
_NAN_MERGE_SQL = {name: (f"CASE WHEN min_by(__nan_first, __position) THEN double('NaN') ELSE {name}(__{name}) END",
                         f"CASE WHEN __nan_first THEN double('NaN') ELSE __{name} END") for name in ("min", "max")}


def merge_sql(spec: WindowSpec, value_type: Any) -> tuple[str, str]:
    """The window's value as SQL text for ``spec``'s aggregation: from the partial rows of its
    records (merged), and from one partial row (:data:`_MERGE_SQL`; NaN-aware for min/max of
    floating values)."""
    assert isinstance(spec.aggregation, str)
    return (_NAN_MERGE_SQL if nan_aware(spec, value_type) else _MERGE_SQL)[spec.aggregation]


def with_group_hash(data: "DataFrame", group_cols: Sequence[str]) -> "DataFrame":
    return data if "__gh" in data.columns else data.withColumn("__gh", group_hash(group_cols))


def kept_columns(group_cols: Sequence[str]) -> list[str]:
    """``__gh``, the group's columns and ``key`` (once)."""
    return ["__gh", *group_cols] + ([] if "key" in group_cols else ["key"])


# The fixed windows' plan is written as SQL text: each column expression built in Python is a
# round trip to the JVM (a ``Column`` per ``F.col``, literal, operator and alias: ~500 of them for
# this plan), which an incremental run pays on its critical path; a ``selectExpr`` is one.
_RUNNING = " ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
_WHOLE = " ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"


def _over(group_cols: Sequence[str], order_cols: Sequence[str], frame: str = "") -> str:
    """The SQL window of :func:`_group_window` in offset order, with ``frame``."""
    return (f"(PARTITION BY {', '.join(map(quote_column, ['__gh', *group_cols]))} "
            f"ORDER BY {', '.join(map(quote_column, order_cols))}{frame})")


def step_floor_sql(value: str, step: int) -> str:
    """The largest multiple of ``step`` <= ``value`` (Python's floor, negative values too), as SQL text."""
    return f"(({value}) - pmod(({value}), CAST({int(step)} AS BIGINT)))"


def fixed_event_times(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str],
                      group_cols: Sequence[str], observation: Any = None) -> "DataFrame":
    """Stage 1 of the fixed windows: each record (``__gh``, the group's columns, ``key``,
    ``value``, ``ts``) with the bound at or below which its group's windows are closed when it
    arrives (``__closed_upto``; at least ``__closed_floor`` when ``data`` has that column) and at
    the end of the data (``__final_closed_upto``). Records none
    of whose windows is emitted are left out. One shuffle by the group and one sort by offset; both
    windows share them. ``observation`` (a ``pyspark.sql.Observation``) receives ``groups``."""
    from pyspark.sql import functions as F

    closed_below = spec.grace_ms + spec.duration_ms  # a window is closed when start <= latest - this
    running = _over(group_cols, order_cols, _RUNNING)
    closed_upto = f"greatest(CAST(0 AS BIGINT), max(ts) OVER {running}) - {closed_below}"
    if "__closed_floor" in data.columns:  # an incremental run: windows up to it were emitted before
        closed_upto = f"greatest({closed_upto}, __closed_floor)"
    # every window function here shares the offset order, so one window operator computes them all
    positions = _positions(spec, data, group_cols, order_cols)
    columns = [*map(quote_column, kept_columns(group_cols)), *map(quote_column, positions), "value", "ts",
               f"{closed_upto} AS __closed_upto",
               f"greatest(CAST(0 AS BIGINT), max(ts) OVER {_over(group_cols, order_cols, _WHOLE)}) - {closed_below}"
               " AS __final_closed_upto",
               f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group"]
    hashed = with_group_hash(data, group_cols)
    if observation is None:
        timed = hashed.selectExpr(*columns)
    else:  # the full run: what the group count and the window state need, observed
        timed = hashed.select(*map(F.expr, columns), *_state_columns(group_cols, order_cols, observation))
        timed = timed.observe(observation, *_state_observations())
    # else no window of the record is emitted
    kept = timed.where(f"ts - {spec.duration_ms} < __final_closed_upto")
    return kept.drop("__first_of_group", "__is_last", "__max_ts")


def _state_columns(group_cols: Sequence[str], order_cols: Sequence[str], observation: Any) -> list["Column"]:
    """What :func:`_state_observations` needs per record (nothing without an observation)."""
    from pyspark.sql import functions as F

    if observation is None:
        return []
    whole = _whole_group(group_cols, order_cols)
    last = F.row_number().over(_group_window(group_cols).orderBy(*order_cols)) == F.count(F.lit(1)).over(whole)
    return [last.alias("__is_last"), F.max("ts").over(whole).alias("__max_ts")]


def _state_observations() -> list["Column"]:
    """The observed ``groups``, and what the per-group window state written after a full run
    (:func:`lakehouse.window_state.full_state`) can take from this pass instead of a scan of its
    own: ``state_floor``, the smallest per-group bound ``latest - grace - duration`` (the state
    holds each group's records above its bound), and ``stale_groups``, the groups whose last
    record in offset order or newest record lies at or below their bound. Without stale groups
    the records above ``state_floor`` hold every group's newest and last record, so the state
    comes from them alone (a scan that Iceberg prunes to the newest files)."""
    from pyspark.sql import functions as F

    bound = F.col("__final_closed_upto")
    stale = F.col("__is_last") & ((F.col("ts") <= bound) | (F.col("__max_ts") <= bound))
    return [F.sum("__first_of_group").alias("groups"), F.min(bound).alias("state_floor"),
            F.count(F.when(stale, 1)).alias("stale_groups")]


def fixed_window_parts(timed: "DataFrame", spec: WindowSpec, group_cols: Sequence[str],
                       order_cols: Sequence[str] = ()) -> "DataFrame":
    """Stage 2 of the fixed windows: rows of the group's columns, ``key``, ``__first``, ``__last``
    and partial aggregates: the records whose kept windows are the starts ``__first``,
    ``__first + step``, ... ``__last``, aggregated together.

    A tumbling record has one window (``__first == __last``), kept or not. A hopping record is kept
    by a suffix of its windows (those opening after its group's bound when it arrives) up to the
    last one ``final()`` emits; records with the same range are aggregated *before* the range is
    expanded, so the expansion multiplies a few partial rows per key and step, not every record.
    """
    assert isinstance(spec.aggregation, str)
    if spec.step_ms is None:
        # tumbling: one window; Python's floor modulo, as the edge computes it (negative ts too)
        first = last = step_floor_sql("ts", spec.duration_ms)
    else:
        step = spec.step_ms
        newest = step_floor_sql("ts", step)
        # the oldest start is the smallest multiple of step above ts - duration, and at least 0
        oldest = f"greatest(CAST(0 AS BIGINT), {step_floor_sql(f'ts - {spec.duration_ms}', step)} + {step})"
        first = f"greatest({oldest}, {step_floor_sql('__closed_upto', step)} + {step})"  # first open at arrival
        last = f"least({newest}, {step_floor_sql('__final_closed_upto', step)})"  # the last one final() emits
    kept_cols = kept_columns(group_cols)
    positions = _positions(spec, timed, group_cols, order_cols)
    ranged = timed.selectExpr(*map(quote_column, kept_cols), *map(quote_column, positions), "value",
                              f"{first} AS __first", f"{last} AS __last",
                              "__closed_upto", "__final_closed_upto")
    kept = ranged.where("__first > __closed_upto AND __first <= __last AND __last <= __final_closed_upto")
    return kept.groupBy(*kept_cols, "__first", "__last").agg(*partials(spec.aggregation, positions))


def native_fixed_windows(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str],
                         group_cols: Sequence[str], observation: Any = None) -> "DataFrame":
    """Tumbling or hopping ``final()`` rows of ``data`` (columns ``key``, ``ts``, ``value``, the order
    columns): ``__gh``, ``key``, ``window_start``, ``window_end``, ``value``.

    ``group_cols`` are the Kafka partition column and ``key`` (per-key closing: the edge keeps
    state per partition and key) or the partition column alone (per-partition closing).
    Stages: :func:`fixed_event_times`, :func:`fixed_window_parts`, then one aggregation per window.
    Every step after the first shuffle groups by columns that include the group, so Spark keeps
    the data where the shuffle put it (no second exchange).
    """
    from pyspark.sql import functions as F

    reason = native_unsupported_reason(spec)
    if reason:
        raise ValueError(f"the native path cannot compute {reason}")
    assert isinstance(spec.aggregation, str)
    parts = fixed_window_parts(fixed_event_times(data, spec, order_cols, group_cols, observation), spec, group_cols,
                               order_cols)
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


def sliding_key_flags(data: "DataFrame", spec: WindowSpec, order_cols: Sequence[str],
                      group_cols: Sequence[str] = ("key",), observation: Any = None,
                      per_group: bool = True) -> "DataFrame":
    """``data`` with ``__gh``, ``__final`` (the group's final event time), ``__accepted`` (the edge
    keeps the record) and ``__native`` (the group's sliding windows have the closed form: no
    accepted record inside an already-closed window, every accepted timestamp above
    ``2 * duration + grace``, and for min/max no NaN value). A group is a key (with its Kafka
    partition when ``group_cols`` holds it). ``per_group=False``: each record's ``__awkward``
    instead of ``__native``, which :func:`native_sliding_windows` folds over the group in its own
    window operator (one pass over every record fewer).

    ``observation`` receives ``groups``, ``replayed`` (groups not native; with ``per_group``) and
    what the window state of a full run can take from this pass (``state_floor`` and
    ``stale_groups`` as in :func:`_state_observations`, with ``spec.state_bound_ms``; read only
    when no group was replayed: every group's newest record is then above 0)."""
    from pyspark.sql import functions as F

    awkward = _sliding_awkward(spec, data.schema["value"].dataType, "__latest")
    running = _over(group_cols, order_cols, _RUNNING)
    whole = _over(group_cols, order_cols, _WHOLE)
    # every frame here shares the offset order: one window operator (the fold of the awkward
    # records over the group needs the running event time, so it is another one's)
    flagged = with_group_hash(data, group_cols).selectExpr(
        "*", f"greatest(CAST(0 AS BIGINT), max(ts) OVER {running}) AS __latest",
        f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group",
        f"greatest(CAST(0 AS BIGINT), max(ts) OVER {whole}) AS __final",
        *([f"count(1) OVER {whole} AS __rows", f"row_number() OVER {_over(group_cols, order_cols)} AS __row"]
          if observation is not None else []))
    flagged = flagged.selectExpr("*", f"ts > __latest - {spec.duration_ms + spec.grace_ms + 1} AS __accepted",
                                 f"{awkward} AS __awkward")
    if per_group:
        flagged = flagged.selectExpr("*", f"max(CAST(__awkward AS INT)) OVER {whole} = 0 AS __native").drop("__awkward")
    if observation is not None:
        metrics = [F.sum("__first_of_group").alias("groups")]
        if per_group:
            metrics.append(F.sum(F.when(~F.col("__native"), F.col("__first_of_group")).otherwise(0)).alias("replayed"))
        bound = F.col("__final") - F.lit(spec.state_bound_ms)
        stale = (F.col("__row") == F.col("__rows")) & (F.col("ts") <= bound)  # the last record in offset order
        metrics += [F.min(bound).alias("state_floor"), F.count(F.when(stale, 1)).alias("stale_groups")]
        flagged = flagged.observe(observation, *metrics)
    return flagged.drop("__first_of_group", "__rows", "__row", "__latest")


def _sliding_awkward(spec: WindowSpec, value_type: Any, latest: str) -> str:
    """SQL: the record (event time ``latest`` at its arrival) keeps its group off the closed form:
    accepted, and inside an already-closed window or near time 0 (or NaN under min/max)."""
    accepted = f"ts > {latest} - {spec.duration_ms + spec.grace_ms + 1}"
    awkward = f"({accepted} AND (ts <= {latest} - {spec.grace_ms + 1} OR ts <= {2 * spec.duration_ms + spec.grace_ms}))"
    if nan_aware(spec, value_type):  # the edge's NaN rule: through its engines
        awkward = f"({awkward} OR isnan(value))"
    return awkward


def sliding_tail_flags(records: "DataFrame", spec: WindowSpec, order_cols: Sequence[str],
                       group_cols: Sequence[str], observation: Any) -> "DataFrame":
    """An increment's sliding records in the form :func:`native_sliding_windows` takes, for the
    groups that end their old data on the closed form (the window state holds only such groups:
    a full run with replayed keys writes none).

    ``records`` (:func:`lakehouse.windows.tail.tail_records` with ``keep_new``): a tail group's old
    records newer than ``E_old - duration - grace - 1`` (``E_old``: its event time at the end of
    the old data; every one of them was accepted) and its new ones (``__new``). A new record's
    event time at arrival is ``E_old`` or a newer timestamp of the group before it. The windows
    ``final()`` adds are those ending after ``E_old - grace - 1`` (the old ones are emitted and
    never change: a non-awkward new record lies after them), made of these records only (a
    window ``[t - duration, t]`` with ``t >= E_old - grace`` starts at or after the oldest).
    A group with an awkward new record is left out and counted in ``observation``
    (``awkward``): the run replaces its key instead."""
    from pyspark.sql import functions as F

    bound = spec.duration_ms + spec.grace_ms + 1
    old_latest = f"coalesce(__closed_floor + {bound}, CAST(0 AS BIGINT))"
    running = _over(group_cols, order_cols, _RUNNING)
    whole = _over(group_cols, order_cols, _WHOLE)
    timed = records.selectExpr(
        "*", f"greatest({old_latest}, max(ts) OVER {running}) AS __latest",
        f"CAST(row_number() OVER {_over(group_cols, order_cols)} = 1 AS INT) AS __first_of_group")
    awkward = _sliding_awkward(spec, records.schema["value"].dataType, "__latest")
    flagged = timed.selectExpr(
        "*", f"(NOT __new OR ts > __latest - {bound}) AS __accepted",
        f"max(CASE WHEN __new AND {awkward} THEN 1 ELSE 0 END) OVER {whole} = 0 AS __native",
        f"greatest({old_latest}, max(ts) OVER {whole}) AS __final",
        f"{old_latest} - {spec.grace_ms + 1} AS __emitted_upto")
    observed = flagged.observe(observation, F.expr("sum(CASE WHEN NOT __native THEN __first_of_group ELSE 0 END)"
                                                   " AS awkward"))
    return observed.drop("__first_of_group", "__new")


def native_sliding_windows(flagged: "DataFrame", spec: WindowSpec, group_cols: Sequence[str] = ("key",),
                           observation: Any = None) -> "DataFrame":
    """Sliding ``final()`` rows (``__gh``, ``key``, ``window_start``, ``window_end``, ``value``) of
    the groups :func:`sliding_key_flags` marked native (``__native``), or, from its records'
    ``__awkward``, of the groups none of whose records is awkward; ``observation`` then receives
    ``replayed`` (the other groups). With ``__emitted_upto`` (an increment), only the windows
    ending after it.

    One window operator over the accepted records in timestamp order (the data stays partitioned
    by the group: no further shuffle, one sort): a ``RANGE`` frame aggregates each window, ``lead``
    keeps one row per timestamp (peers share the frame), and the awkward records are folded over
    the group."""
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
    value = {"sum": f"sum(value) OVER {frame}", "count": f"count(value) OVER {frame}",
             "mean": f"sum(CAST(value AS DOUBLE)) OVER {frame} / count(value) OVER {frame}",
             "min": f"min(value) OVER {frame}", "max": f"max(value) OVER {frame}"}[aggregation]
    increment = "__emitted_upto" in flagged.columns  # windows up to it were emitted before
    columns = ["__gh", "key", "ts", "__final", *(["__emitted_upto"] if increment else []), f"{value} AS value",
               f"lead(ts) OVER ({by_ts}) AS __next_ts"]
    if per_record:
        columns += [f"max(CAST(__awkward AS INT)) OVER ({by_ts}{_WHOLE}) = 0 AS __native",
                    f"row_number() OVER ({by_ts}) = 1 AS __first_ts"]
    windows = rows.selectExpr(*columns)
    if per_record and observation is not None:
        from pyspark.sql import functions as F

        windows = windows.observe(observation, F.expr("count(CASE WHEN __first_ts AND NOT __native THEN 1 END)"
                                                      " AS replayed"))
    emitted = windows.where(f"(__next_ts IS NULL OR __next_ts <> ts) AND ts <= __final - {spec.grace_ms + 1}"
                            + (" AND __native" if per_record else "")
                            + (" AND ts > __emitted_upto" if increment else ""))
    start = f"greatest(CAST(0 AS BIGINT), ts - {int(spec.duration_ms)}) AS window_start"
    return emitted.selectExpr("__gh", "key", start, "ts AS window_end", "value")

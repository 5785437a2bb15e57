"""The native window path's loop: the edge's ``final()`` windows by one JVM loop per task.

Spark's own operators compute the native windows (:mod:`lakehouse.window_native`) with a window
operator that buffers every group and evaluates interpreted frames per record, then one or two
aggregations; no arrangement of them gets near the floor of the job (scan, shuffle by group,
sort by offset; ``bench/README.md``). Here the records take that floor's plan (a shuffle by the
closing group's hash, then group and Kafka offset order within each task: the loop puts each
task's records in per-hash buckets and orders each bucket by offset, :func:`loop_orders_offsets`)
and then one pass of ``streamlake.windows.WindowLoop`` (Java, ``lakehouse/jvm``, built by ``./dev bootstrap``:
:mod:`lakehouse.window_jar`) over each task's rows: per group the running event time, the
edge's lateness rule and the open windows' partial aggregates, emitting each window as it closes.
Sliding windows of tidy keys take the closed form; a key with a record inside an already-closed
window switches to the JVM port of the edge's sliding engine (so no key leaves the loop).

A full run of tumbling or hopping windows also needs the per-group window state for the next
incremental run (:mod:`lakehouse.window_state`); the loop sees each group's event time, last
record and open records at the group's end, so it gathers the state's rows in the same pass
(:func:`loop_state`: an accumulator the driver reads after the job) instead of a scan of the
table after the output's commit.

The figures the job reports and the window state needs (rows read and skipped, groups,
``state_floor``, ``stale_groups``, ``replayed``, windows written) are counted by the loop into an
accumulator (:func:`loop_figures`); the rows are the windows alone.

:func:`loop_unavailable_reason` says when the loop cannot run (no jar on the class path, the
``loop="off"`` option, an input whose plan observes metrics); the caller then uses Spark's
operators, which compute the same rows.

Example::

    if loop_unavailable_reason(data, "auto") is None:
        figures = loop_figures(data.sparkSession)
        rows = loop_windows(data, spec, order_cols, group_cols, figures)   # figures.get after the job
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from lakehouse.window_native import group_hash, quote_column

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from lakehouse.window_recompute import WindowSpec

__all__ = ("DRIVER_WRITE_CLASS", "INCREMENT_COLUMNS", "LOOP_CLASS", "LOOP_MODES", "ONE_TASK_MAX_ROWS",
           "STATE_SNAPSHOTS_KEPT", "TASK_BYTES_HELD", "TASK_ROWS_HELD", "LoopFigures", "LoopState",
           "driver_writes_available", "loop_available", "loop_figures", "loop_input", "loop_orders_offsets",
           "loop_state", "loop_unavailable_reason", "loop_windows")

LOOP_CLASS = "streamlake.windows.WindowLoop"
#: ``auto``: the loop when its jar is on the class path; ``on``: the loop or an error; ``off``: Spark's operators
LOOP_MODES = ("auto", "on", "off")
_MISSING = ("the window loop's jar is not on the class path (./dev bootstrap builds it with the JDK's javac; "
            "spark-submit needs it in --jars like the other runtime jars)")


#: an increment's rows (:func:`lakehouse.window_tail.loop_tail_rows`): old or new, the group's old
#: ``latest`` and ``last``; the loop then computes the windows the new rows close and the state after them
INCREMENT_COLUMNS = ("__new", "__old_latest", "__old_last")

#: the most window state records one task, and the whole job, gathers for the driver; beyond, the
#: job reads the state from the table instead (:func:`lakehouse.window_state.full_state`)
STATE_TASK_CAP = 500_000
STATE_TOTAL_CAP = 1_000_000


#: the window state table's snapshots its writes keep (past twice as many, the older ones are
#: expired and their files deleted): a run reads only the newest state, and the one before it while
#: it writes the next (a reordered key's fallback), so at least 2
STATE_SNAPSHOTS_KEPT = 8

#: the most rows :func:`loop_input` sorts in one task, without a shuffle: an increment's new rows
#: and its state's rows (below that, a shuffle's second stage costs more than it spreads)
ONE_TASK_MAX_ROWS = 200_000

#: the most rows of one task the loop holds in its per-hash buckets to group them and put them in
#: offset order itself (:func:`loop_orders_offsets`; ~80 bytes each, in the task's execution
#: memory); past it, or past what Spark's memory manager grants, the task's rows go through
#: Spark's external sorter, which spills
TASK_ROWS_HELD = 200_000_000
#: the most bytes of one task's rows the loop holds in its buckets (the memory manager's grant is
#: usually the tighter bound); past it the rows go through Spark's external sorter too
TASK_BYTES_HELD = 16 << 30

#: a small increment's writes from the driver (:mod:`lakehouse.window_tail`; in the jar when it was
#: compiled with the Iceberg runtime, :mod:`lakehouse.window_jar`)
DRIVER_WRITE_CLASS = "streamlake.windows.DriverWrite"


@dataclass
class LoopState:
    """The per-group window state a fixed windows' loop gathers (the rows of
    :func:`lakehouse.window_state.full_state`), read with :meth:`frame` after the job ran."""

    handle: Any  # streamlake.windows.WindowLoop$State
    schema: Any = None  # the state rows' StructType
    #: set by an increment small enough to write its windows and this state from the driver
    driver_writes: bool = False
    #: set by an increment whose rows (new ones and the old state's) one task sorts faster than a
    #: shuffle would spread them (:data:`ONE_TASK_MAX_ROWS`)
    one_task: bool = False

    def frame(self, spark: "SparkSession") -> "DataFrame | None":
        """The state's rows (one per group), or None when they were too many to gather."""
        from pyspark.sql import DataFrame

        jdf = self.handle.frame(spark._jsparkSession)
        return None if jdf is None else DataFrame(jdf, spark)

    def open_records(self) -> int | None:
        """The gathered state's open records (None when it was too large to gather)."""
        count = int(self.handle.openRecords())
        return None if count < 0 else count

    def overwrite(self, spark: "SparkSession", identifier: str, properties: dict[str, str]) -> bool:
        """Replace the rows of Iceberg table ``identifier`` with the gathered state from the driver,
        in one commit carrying ``properties``, and past twice :data:`STATE_SNAPSHOTS_KEPT`
        snapshots expire the older ones; False (nothing written) when the state was too large to
        gather or the table's columns are not the state's."""
        jvm: Any = spark.sparkContext._jvm
        return bool(getattr(jvm, DRIVER_WRITE_CLASS).overwriteState(spark._jsparkSession, identifier, self.handle,
                                                                    properties, STATE_SNAPSHOTS_KEPT))


def driver_writes_available(spark: "SparkSession") -> bool:
    """Whether the driver can load :data:`DRIVER_WRITE_CLASS`."""
    return _class_available(spark, DRIVER_WRITE_CLASS)


def loop_state(data: "DataFrame", group_cols: Sequence[str], order_cols: Sequence[str], bound: int,
               task_cap: int = STATE_TASK_CAP, total_cap: int = STATE_TOTAL_CAP,
               columns: Sequence[str] | None = None) -> LoopState | None:
    """Where :func:`loop_windows` of tumbling or hopping windows gathers the window state of
    ``data`` (prepared rows: the state's records are structs of its columns) with ``bound`` =
    ``grace + duration``; ``columns``: the records' columns (default: ``data``'s). None when the
    loop's rows cannot give the state's types (a value that is not bigint or double: the loop
    reads it cast)."""
    from pyspark.sql import types as T

    if not isinstance(data.schema["value"].dataType, (T.LongType, T.DoubleType)):
        return None
    names = [c for c in (columns or data.columns) if c != "__gh"]
    fields = {c: data.schema[c].dataType for c in names}
    schema = T.StructType(
        [T.StructField(c, fields[c]) for c in group_cols]
        + [T.StructField("latest", T.LongType()),
           T.StructField("last", T.StructType([T.StructField(c, fields[c]) for c in order_cols])),
           T.StructField("records", T.ArrayType(T.StructType([T.StructField(c, t) for c, t in fields.items()])))])
    spark = data.sparkSession
    handle = getattr(spark.sparkContext._jvm, f"{LOOP_CLASS}$State")(
        spark._jsparkSession, schema.json(), _names(spark, group_cols), _names(spark, order_cols),
        _names(spark, list(fields)), int(bound), int(task_cap), int(total_cap))
    return LoopState(handle, schema)


def _names(spark: "SparkSession", names: Sequence[str]) -> Any:
    """A Java ``String[]`` of ``names``."""
    jvm: Any = spark.sparkContext._jvm
    gateway: Any = spark.sparkContext._gateway
    array = gateway.new_array(jvm.String, len(names))
    for i, name in enumerate(names):
        array[i] = name
    return array


def loop_available(spark: "SparkSession") -> bool:
    """Whether the session's driver can load the loop's class."""
    return _class_available(spark, LOOP_CLASS)


def _class_available(spark: "SparkSession", name: str) -> bool:
    jvm: Any = spark.sparkContext._jvm
    try:
        jvm.java.lang.Class.forName(name, False, jvm.Thread.currentThread().getContextClassLoader())
    except Exception:  # noqa: BLE001 - py4j wraps ClassNotFoundException
        return False
    return True


def loop_unavailable_reason(data: "DataFrame", mode: str = "auto") -> str | None:
    """None when the loop computes ``data``'s windows under ``mode`` (:data:`LOOP_MODES`), else
    why Spark's operators do; ``mode="on"`` without the jar is an error."""
    if mode not in LOOP_MODES:
        raise ValueError(f"the window loop mode must be one of {', '.join(LOOP_MODES)}, got {mode!r}")
    if mode == "off":
        return "the window loop is off"
    key_type = data.schema["key"].dataType.simpleString()
    if key_type not in ("string", "binary", "int", "bigint"):
        return f"keys of type {key_type} (the loop takes string, binary, int and bigint keys)"
    spark = data.sparkSession
    if not loop_available(spark):
        if mode == "on":
            raise ValueError(_MISSING)
        return _MISSING
    jvm: Any = spark.sparkContext._jvm
    if getattr(jvm, LOOP_CLASS).observes(data._jdf):
        return "the input's plan observes metrics, which a loop over its rows would never report"
    return None


def loop_input(data: "DataFrame", group_cols: Sequence[str], order_cols: Sequence[str],
               value_integral: bool, one_task: bool = False, loop_groups: bool = False) -> "DataFrame":
    """The floor's plan over the columns the loop reads: ``__gh``, the group's columns, ``key``,
    ``ts``, ``value`` (bigint when ``value_integral``, else double) and ``__closed_floor`` when
    ``data`` has it (and an increment's :data:`INCREMENT_COLUMNS`), shuffled by the group and
    (unless ``loop_groups``) sorted within each task by the group's hash, the order columns that
    are not the group's (the offset), then the group's columns.

    A group's records are contiguous and in offset order unless two groups share the hash, which
    the loop handles; putting the offset right after the hash is what makes the sort cheap: Spark
    compares an 8-byte prefix of the first column, every record of a group shares it, and the
    comparison that follows ends on the offset instead of comparing the key's bytes (the floor's
    own order, by partition and key first: 5.3-5.6 s at 10M rows here, this one 4.9 s).

    ``one_task``: all rows in one task, sorted the same way, without a shuffle (for a few hundred
    thousand rows at most: an increment's, :data:`ONE_TASK_MAX_ROWS`): one stage instead of two.

    ``loop_groups``: shuffled (or coalesced) only, not sorted: the loop groups each task's rows by
    hash and orders each hash's rows by offset itself (:func:`loop_orders_offsets`)."""
    columns = list(dict.fromkeys(["__gh", *group_cols, "key", *order_cols]))
    value = f"CAST(value AS {'BIGINT' if value_integral else 'DOUBLE'}) AS value"
    extra = [c for c in ("__closed_floor", *INCREMENT_COLUMNS) if c in data.columns]
    hashed = data if "__gh" in data.columns else data.withColumn("__gh", group_hash(group_cols))
    narrowed = hashed.selectExpr(*map(quote_column, columns), "ts", value, *extra)
    offsets = [c for c in order_cols if c not in group_cols]
    grouped = narrowed.coalesce(1) if one_task else narrowed.repartition("__gh", *group_cols)
    return grouped if loop_groups else grouped.sortWithinPartitions(
        "__gh", *offsets, *group_cols)


def loop_orders_offsets(data: "DataFrame", group_cols: Sequence[str], order_cols: Sequence[str]) -> str | None:
    """The offset column the loop orders each hash's rows by itself (its input then not sorted,
    ``loop_input(loop_groups=True)``; ``streamlake.windows.GroupBuckets`` holds up to
    :data:`TASK_ROWS_HELD` rows and :data:`TASK_BYTES_HELD` bytes of a task in per-hash buckets,
    within what Spark's memory manager grants; a larger task takes Spark's external sorter), or
    None for Spark's full sort: when the order has no single int or bigint column besides the
    group's (a Kafka offset)."""
    from pyspark.sql import types as T

    offsets = [c for c in order_cols if c not in group_cols]
    if len(offsets) != 1:
        return None
    return offsets[0] if isinstance(data.schema[offsets[0]].dataType, (T.IntegerType, T.LongType)) else None


@dataclass
class LoopFigures:
    """What the loop counts while its job runs (``streamlake.windows.LoopFigures``, an accumulator
    each task adds to once): read :attr:`get` after the job, like a ``pyspark.sql.Observation``.

    A full run's figures: ``groups``, ``state_floor`` (the smallest ``latest - grace - duration``
    of the groups, None without any), ``stale_groups``, ``rows`` and ``skipped`` (rows read, and of
    those with a NULL timestamp or value), ``replayed`` (sliding keys through the edge's engine),
    ``windows`` (window rows emitted); an increment's: ``new_rows``, ``changed`` (groups with a new
    complete record), ``reordered`` (of those, the groups whose new records do not all follow their
    old ones: their windows are left out of the rows) and ``windows``.

    Example::

        figures = loop_figures(spark)
        loop_windows(data, spec, order_cols, group_cols, figures).write...
        figures.get["groups"]
    """

    handle: Any  # streamlake.windows.LoopFigures

    @property
    def get(self) -> dict[str, int | None]:
        pairs = (pair.split("=") for pair in str(self.handle.encoded()).split(";"))
        return {name: int(value) if value else None for name, value in pairs}


def loop_figures(spark: "SparkSession") -> LoopFigures:
    """A new, registered :class:`LoopFigures` for one :func:`loop_windows` job."""
    jvm: Any = spark.sparkContext._jvm
    return LoopFigures(jvm.streamlake.windows.LoopFigures.register(spark._jsparkSession))


def loop_windows(data: "DataFrame", spec: "WindowSpec", order_cols: Sequence[str], group_cols: Sequence[str],
                 figures: LoopFigures | None = None, state: LoopState | None = None) -> "DataFrame":
    """``final()`` rows of ``data`` (prepared columns; rows with a NULL timestamp or value are
    counted as skipped): ``__gh``, ``key``, ``window_start``, ``window_end``, ``value`` (bigint for
    counts and for sums, minima and maxima of integral values, else double). Per key (``key`` in
    ``group_cols``) the rows come grouped by key and in time order. ``figures``
    (:func:`loop_figures`) receives what the loop counts (:class:`LoopFigures`); ``state``
    (:func:`loop_state`; tumbling and hopping windows, required for an increment's rows,
    :data:`INCREMENT_COLUMNS`) gathers the window state while the rows are computed, in one task
    when ``state.one_task``."""
    from pyspark.sql import DataFrame
    from pyspark.sql import types as T

    aggregation = spec.aggregation
    if not isinstance(aggregation, str):
        raise ValueError(f"the window loop cannot compute a custom aggregation ({type(aggregation).__name__})")
    integral = isinstance(data.schema["value"].dataType, (T.ByteType, T.ShortType, T.IntegerType, T.LongType))
    in_loop = loop_orders_offsets(data, group_cols, order_cols)
    sorted_rows = loop_input(data, group_cols, order_cols, integral, one_task=state is not None and state.one_task,
                             loop_groups=in_loop is not None)
    spark = data.sparkSession
    jvm: Any = spark.sparkContext._jvm
    names = _names(spark, group_cols)
    loop = getattr(jvm, LOOP_CLASS)
    counter = None if figures is None else figures.handle
    if spec.kind == "sliding":
        jdf = loop.sliding(sorted_rows._jdf, names, spec.duration_ms, spec.grace_ms, aggregation, counter, in_loop,
                           TASK_ROWS_HELD, TASK_BYTES_HELD)
    else:
        step = spec.step_ms or spec.duration_ms
        jdf = loop.fixed(sorted_rows._jdf, names, spec.duration_ms, step, spec.grace_ms, aggregation,
                         "key" in group_cols, None if state is None else state.handle, counter, in_loop, TASK_ROWS_HELD,
                         TASK_BYTES_HELD)
    return DataFrame(jdf, spark)

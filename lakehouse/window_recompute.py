"""The ``windows`` job: recompute the edge's time windows in batch, with the edge's exact semantics.

The edge emits ``tumbling_window(...).mean().final()`` results as it reads Kafka; this job reads
the raw records back from a lake table and produces the same rows, for backfills, for a changed
window definition, or to check the edge. Both sides run the same window engines
(``stream_edge.dataframe.windows.replay``): Spark only groups and orders the records.

Two paths compute the rows (the report line names the one taken): the *native* path
(:mod:`lakehouse.window_native`: window functions and aggregations, no Python per row) whenever
the window is expressible that way (``sum``/``count``/``mean``/``min``/``max``), and the
*python-engine* path (the edge's engines in ``applyInPandas``) for custom aggregations (an
``Aggregation`` object such as ``Reduce`` or ``First`` in ``WindowSpec.aggregation``). Sliding keys
whose records land inside already-closed windows (or near time 0) are replayed by the engines
even on the native path; ``WindowRecomputeOptions.engine`` forces a path.

What "the same input" means: the edge sees each Kafka partition in offset order and keys are
independent, so the job groups by key (``--closing key``, the edge's default) or by Kafka
partition (``--closing partition``, for edges built with ``closing_strategy="partition"``) and
feeds each group in offset order. The lake table must therefore carry the offsets: write it with
``DataLakeSink(include_kafka_metadata=True)`` (columns ``_kafka_key``, ``_kafka_timestamp``,
``_kafka_partition``, ``_kafka_offset``), or name other columns with ``--order-by``.

Output: one row per emitted window, ``key``, ``window_start``, ``window_end`` (epoch ms, start
inclusive; sliding windows include their end, as on the edge) and ``value``: created or
replaced by a full run; later runs are incremental (:mod:`lakehouse.window_incremental`: only the
records appended since the source snapshot the output records, one ``MERGE``); ``full=True``
(``--full``) forces a full run. Rows whose key is NULL are
ignored, as on the edge; rows whose timestamp or value is NULL are counted and skipped (the edge
would have failed on them).

Example::

    spec = WindowSpec.parse("tumbling", "1s", aggregation="mean")
    report = run_window_recompute(spark, WindowRecomputeOptions(
        table="lake.db.sensor_readings", output="lake.db.sensor_temp_1s",
        value_column="temp", window=spec))
    print(report.summary_line())
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from lakehouse.delta_tables import DeltaTable
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.fault_injection import pause_point
from lakehouse.window_incremental import (bookmark_properties, current_snapshot_id, definition_fingerprint,
                                          plan_increment, run_increment, source_at, uses_state)
from lakehouse.window_loop import loop_unavailable_reason
from lakehouse.window_native import group_hash
from lakehouse.window_paths import choose_path, compute_windows, presorted_sliding
from lakehouse.tables import open_table, resolve_format

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lakehouse.windows")

WINDOW_KINDS = ("tumbling", "hopping", "sliding")
AGGREGATIONS = ("sum", "count", "mean", "min", "max")
CLOSING = ("key", "partition")
OUTPUT_COLUMNS = ("key", "window_start", "window_end", "value")
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)?\s*$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(text: str | int, what: str = "duration") -> int:
    """``500ms``, ``1s``, ``5m``, ``1h``, ``1d`` or a plain number of milliseconds -> ms.

    >>> parse_duration_ms("5m")
    300000
    """
    if isinstance(text, int):
        return text
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{what}: not a duration: {text!r} (examples: 500ms, 1s, 5m, 1h, 1d)")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]


@dataclass(frozen=True)
class WindowSpec:
    """A window definition in the edge's vocabulary (``tumbling_window(duration, grace)`` ...).

    Checked the way the edge checks it: positive duration, grace >= 0, and for hopping windows a
    step that is positive, smaller than the duration; sliding windows close per key only.
    """

    kind: str
    duration_ms: int
    grace_ms: int = 0
    step_ms: int | None = None
    aggregation: Any = "mean"  # a name of AGGREGATIONS, or a stream_edge Aggregation object
    closing: str = "key"
    value_type: str | None = None  # Spark type (DDL) of a custom aggregation's result

    def __post_init__(self) -> None:
        if self.kind not in WINDOW_KINDS:
            raise ValueError(f"window kind must be one of {', '.join(WINDOW_KINDS)}, got {self.kind!r}")
        if isinstance(self.aggregation, str):
            if self.aggregation not in AGGREGATIONS:
                raise ValueError(f"aggregation must be one of {', '.join(AGGREGATIONS)}, got {self.aggregation!r}")
        else:
            from stream_edge.dataframe.windows.aggregations import Aggregation

            if not isinstance(self.aggregation, Aggregation) or self.aggregation.collects:
                raise ValueError("a custom aggregation must be a stream_edge Aggregation (not a collector), "
                                 f"got {self.aggregation!r}")
        if self.closing not in CLOSING:
            raise ValueError(f"closing must be 'key' or 'partition', got {self.closing!r}")
        if self.duration_ms <= 0:
            raise ValueError(f"window duration must be positive, got {self.duration_ms} ms")
        if self.grace_ms < 0:
            raise ValueError(f"grace must not be negative, got {self.grace_ms} ms")
        if self.kind == "hopping":
            if self.step_ms is None or not 0 < self.step_ms < self.duration_ms:
                raise ValueError(f"a hopping window needs 0 < step < duration, got step {self.step_ms} ms "
                                 f"and duration {self.duration_ms} ms")
        elif self.step_ms is not None:
            raise ValueError(f"step applies to hopping windows only, not {self.kind}")
        if self.kind == "sliding" and self.closing == "partition":
            raise ValueError("sliding windows close per key only (closing 'key')")

    @classmethod
    def parse(cls, kind: str, duration: str | int, grace: str | int = 0, step: str | int | None = None,
              aggregation: str = "mean", closing: str = "key") -> "WindowSpec":
        """From command-line style text: ``WindowSpec.parse("hopping", "10s", step="5s")``."""
        return cls(kind, parse_duration_ms(duration, "duration"), parse_duration_ms(grace, "grace"),
                   None if step is None else parse_duration_ms(step, "step"), aggregation, closing)

    @property
    def aggregation_name(self) -> str:
        """``mean``, ... or the custom aggregation's name."""
        return self.aggregation if isinstance(self.aggregation, str) else str(self.aggregation.name)

    def describe(self) -> str:
        step = f", step {self.step_ms} ms" if self.step_ms else ""
        return (f"{self.kind} {self.duration_ms} ms{step}, grace {self.grace_ms} ms, {self.aggregation_name}, "
                f"closing per {self.closing}")


def windows_of_group(records: "pd.DataFrame", spec: WindowSpec, order_by: Sequence[str]) -> "pd.DataFrame":
    """The window rows the edge emits for one group (one key, or one Kafka partition).

    ``records`` has columns ``key``, ``ts``, ``value`` and the ``order_by`` columns. Pure pandas +
    the edge's engines, so it is tested without Spark.
    """
    import pandas as pd

    from stream_edge.dataframe.windows.replay import replay

    ordered = records.sort_values(list(order_by), kind="stable") if order_by else records
    rows = replay(zip(ordered["key"].tolist(), ordered["ts"].tolist(), ordered["value"].tolist()),
                  kind=spec.kind, duration_ms=spec.duration_ms, grace_ms=spec.grace_ms, step_ms=spec.step_ms,
                  aggregation=spec.aggregation, mode="final", closing_strategy=spec.closing)
    if not rows:  # typed columns: pyarrow cannot convert untyped empty ones for applyInPandas
        return pd.DataFrame({"key": pd.Series([], dtype=object), "window_start": pd.Series([], dtype="int64"),
                             "window_end": pd.Series([], dtype="int64"), "value": pd.Series([], dtype=object)})
    return pd.DataFrame({
        "key": [r["key"] for r in rows],
        "window_start": pd.array([r["start"] for r in rows], dtype="int64"),
        "window_end": pd.array([r["end"] for r in rows], dtype="int64"),
        "value": [r["value"] for r in rows],
    })


@dataclass
class WindowRecomputeOptions:
    """What the ``windows`` job reads, computes and writes."""

    table: str
    output: str
    value_column: str
    window: WindowSpec
    key_column: str = "_kafka_key"
    timestamp_column: str = "_kafka_timestamp"
    order_by: Sequence[str] = ("_kafka_partition", "_kafka_offset")
    partition_column: str = "_kafka_partition"
    table_format: str | None = None
    output_format: str | None = None
    where: str | None = None
    default_catalog: str | None = None
    engine: str = "auto"  # auto (native when expressible), native, python
    full: bool = False  # recompute everything even when the output records a usable source snapshot
    loop: str = "auto"  # the native path's JVM loop: auto (when its jar is on the class path), on, off


@dataclass
class WindowReport:
    """The outcome of one recompute, with the job's one-line summary."""

    table: str
    output: str
    spec: str
    rows_read: int = 0
    rows_skipped: int = 0
    groups: int = 0
    windows: int = 0
    seconds: float = 0.0
    path: str = "python-engine"  # or "native"; with the reason when not native

    def summary_line(self) -> str:
        if self.path.startswith("incremental"):
            return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} new rows -> "
                    f"{self.windows} windows added or replaced in {self.seconds:.1f}s; path {self.path}")
        skipped = f" ({self.rows_skipped} with NULL timestamp/value skipped)" if self.rows_skipped else ""
        return (f"windows {self.table} -> {self.output}: {self.spec}; {self.rows_read} rows{skipped} in "
                f"{self.groups} groups -> {self.windows} windows in {self.seconds:.1f}s; path {self.path}")


def _value_type(spark_type: Any, aggregation: Any, declared: str | None = None) -> Any:
    """Spark type of the result: count -> long, mean -> double, sum/min/max keep the input's
    integer or floating kind (as the edge's Python arithmetic does); a custom aggregation's is
    ``declared`` (default double)."""
    from pyspark.sql import types as T

    if not isinstance(aggregation, str):
        return T._parse_datatype_string(declared or "double")
    if aggregation == "count":
        return T.LongType()
    if aggregation == "mean":
        return T.DoubleType()
    if isinstance(spark_type, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return T.LongType()
    if isinstance(spark_type, (T.FloatType, T.DoubleType, T.DecimalType)):
        return T.DoubleType()
    raise TypeError(f"value column must be numeric for {aggregation}, got {spark_type.simpleString()}")


def _check_columns(df: "DataFrame", options: WindowRecomputeOptions, needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        hint = ""
        if any(c.startswith("_kafka_") for c in missing):
            hint = (" (write the lake with DataLakeSink(include_kafka_metadata=True), or name other columns "
                    "with --key-column/--timestamp-column/--order-by)")
        raise ValueError(f"table {options.table} has no column(s) {', '.join(missing)}{hint}; "
                         f"it has: {', '.join(df.columns)}")


def _extra_columns(options: WindowRecomputeOptions, available: Sequence[str] | None = None) -> list[str]:
    """The order columns, plus the Kafka partition column: windows close per partition, or per key
    within its partition (the edge's state is per partition), when the table has that column."""
    extra = list(options.order_by)
    wanted = options.window.closing == "partition" or available is None or options.partition_column in available
    if wanted and options.partition_column not in extra:
        extra.append(options.partition_column)
    return extra


def group_columns(options: WindowRecomputeOptions, extra: Sequence[str]) -> list[str]:
    """The prepared columns a closing group is made of: the partition's ``__order_<i>`` (and
    ``key`` with per-key closing), or ``key`` alone when the table has no partition column."""
    partition = [f"__order_{extra.index(options.partition_column)}"] if options.partition_column in extra else []
    return partition if options.window.closing == "partition" else [*partition, "key"]


def prepare_input(df: "DataFrame", options: WindowRecomputeOptions) -> "DataFrame":
    """Select and rename the columns the engines need: ``key``, ``ts``, ``value`` and
    ``__order_<i>`` for each of :func:`_extra_columns`."""
    from pyspark.sql import functions as F

    extra = _extra_columns(options, df.columns)
    needed = [options.key_column, options.timestamp_column, options.value_column, *extra]
    _check_columns(df, options, needed)
    if options.where:
        df = df.where(options.where)
    ts_type = df.schema[options.timestamp_column].dataType.simpleString()
    ts = F.col(options.timestamp_column)
    if ts_type.startswith("timestamp"):
        ts = F.floor(F.unix_micros(ts.cast("timestamp") if "ntz" in ts_type else ts) / 1000)
    elif ts_type not in ("bigint", "int", "smallint", "tinyint"):
        raise TypeError(f"timestamp column {options.timestamp_column} must hold epoch milliseconds "
                        f"(integer) or timestamps, got {ts_type}")
    cols = [F.col(options.key_column).alias("key"), ts.cast("long").alias("ts"),
            F.col(options.value_column).alias("value")]
    cols += [F.col(c).alias(f"__order_{i}") for i, c in enumerate(extra)]
    return df.select(*cols).where(F.col("key").isNotNull())


def run_window_recompute(spark: "SparkSession", options: WindowRecomputeOptions,
                         progress: Callable[[str], None] | None = None) -> WindowReport:
    """Recompute the windows of ``options.table`` into ``options.output``; returns the report.

    One Spark job computes and writes the rows; the counts of the report come from observations
    of that job (``DataFrame.observe``), not from passes of their own."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    say = progress or log.info
    started = time.monotonic()
    spec = options.window
    report = WindowReport(options.table, options.output, spec.describe())
    source = open_table(spark, options.table, options.table_format, options.default_catalog)
    if not source.exists():
        raise ValueError(f"table {options.table} does not exist")
    target = open_table(spark, options.output, resolve_format(options.output, options.output_format),
                        options.default_catalog)
    plan = plan_increment(options, source, target, say)
    if plan is not None:
        done = run_increment(spark, options, plan, source, target, say)
        if done is not None:
            report.rows_read, report.windows, report.path = done
            pause_point("windows.after-commit")
            report.seconds = time.monotonic() - started
            say(f"windows: {report.rows_read} new rows since source snapshot {plan.since}; "
                f"{report.windows} window rows added or replaced")
            return report
    until = current_snapshot_id(source) if isinstance(source, IcebergTable) else None
    raw = source_at(spark, source.sql_name, until)
    data = prepare_input(raw, options)
    value_type = _value_type(data.schema["value"].dataType, spec.aggregation, spec.value_type)
    order_cols = [f"__order_{i}" for i in range(len(options.order_by))]
    group_cols = group_columns(options, _extra_columns(options, raw.columns))
    complete = F.col("ts").isNotNull() & F.col("value").isNotNull()
    path = choose_path(spec, options.engine)
    say(f"windows: {options.table}; {spec.describe()}; path {path}")
    bookmark = bookmark_properties(until, definition_fingerprint(options))
    loop_reason = loop_unavailable_reason(data, options.loop) if path == "native" else None
    if path == "native" and loop_reason is None:  # one sort, one loop; it counts the rows it reads
        # and gathers the window state the next incremental run starts from
        state_bound = spec.grace_ms + spec.duration_ms if _keeps_state(target, until, spec, path, group_cols) else None
        windows, note = compute_windows(data, spec, order_cols, group_cols, value_type, path, options.loop,
                                        state_bound)
        report.windows = _write_output(spark, windows, options, say, bookmark, sort=not note.clustered,
                                       counted=note.windows)
        return _finish(spark, report, options, raw, note, None, group_cols, order_cols, until, started, say)
    if loop_reason is not None:
        say(f"windows: Spark's operators compute the native windows: {loop_reason}")
    read = Observation(f"windows_read_{uuid.uuid4().hex}")
    data = data.observe(read, F.count(F.lit(1)).alias("rows"),
                        F.sum(F.when(complete, 0).otherwise(1)).alias("skipped")).where(complete)
    presorted = presorted_sliding(data, spec, order_cols, group_cols, value_type, path)
    if presorted is not None:  # one sort; the bookmark follows once no record needs the exact plan
        windows, note = presorted
        report.windows = _write_output(spark, windows, options, say, {}, sort=False)
        late = int(note.observation.get["late"] or 0)
        if late:
            say(f"windows: {late} records arrived after their sliding window closed or lie near time 0; "
                "the exact plan replaces the rows")
            exact = prepare_input(raw, options).where(complete)
            windows, exact_note = compute_windows(exact, spec, order_cols, group_cols, value_type, path,
                                                   options.loop)
            report.windows = _write_output(spark, windows, options, say, bookmark, sort=not exact_note.clustered)
            note = exact_note
        elif bookmark:
            _commit_properties(target, bookmark)
    else:
        windows, note = compute_windows(data, spec, order_cols, group_cols, value_type, path, options.loop)
        report.windows = _write_output(spark, windows, options, say, bookmark, sort=not note.clustered)
    return _finish(spark, report, options, raw, note, (read, data), group_cols, order_cols, until, started, say)


def _finish(spark: "SparkSession", report: WindowReport, options: WindowRecomputeOptions, raw: "DataFrame",
            note: Any, read: tuple[Any, "DataFrame"] | None, group_cols: list[str], order_cols: list[str],
            until: int | None, started: float, say: Callable[[str], None]) -> WindowReport:
    """After a full run's output commit: the window state for the next incremental run (when the
    path uses one), then the report's figures, from the loop's figures or from ``read`` (the
    observation of the rows read, and the rows)."""
    from pyspark.sql import functions as F

    spec = options.window
    target = open_table(spark, options.output, resolve_format(options.output, options.output_format),
                        options.default_catalog)
    complete = F.col("ts").isNotNull() & F.col("value").isNotNull()
    if until is not None and _keeps_state(target, until, spec, note.path, group_cols):
        from lakehouse.window_state import save_full_state, write_state  # what the next incremental run starts from

        state = note.loop_state
        if state is not None and _state_from_driver(spark, state, options, int(until)):
            say("windows: the window state gathered by the loop (written from the driver)")
        elif state is not None and (gathered := state.frame(spark)) is not None:  # from the same pass
            write_state(gathered, options, int(until), definition_fingerprint(options),
                        open_records=state.open_records())
            say("windows: the window state gathered by the loop")
        else:
            save_full_state(prepare_input(raw, options).where(complete), options, group_cols, order_cols, until,
                            definition_fingerprint(options), note.state_floor())
    pause_point("windows.after-commit")
    counted = note.rows_read()
    if counted is None:
        assert read is not None
        counts = read[0].get
        counted = int(counts["rows"] or 0), int(counts["skipped"] or 0)
    report.rows_read, report.rows_skipped = counted
    report.groups = note.groups(None if read is None else read[1], group_cols)
    report.path = str(note)
    report.seconds = time.monotonic() - started
    say(f"windows: {report.rows_read} rows, {report.groups} groups in {options.table}")
    return report


def _state_from_driver(spark: "SparkSession", state: Any, options: WindowRecomputeOptions, until: int) -> bool:
    """Overwrite the existing state table with the state the loop gathered, from the driver
    (:meth:`lakehouse.window_loop.LoopState.overwrite`: no Spark job for a table of one row per
    group); False, nothing written, when the table is new, its columns are not the state's (the
    definition changed), the state was too large to gather or the driver cannot write."""
    from lakehouse.window_loop import driver_writes_available
    from lakehouse.window_state import state_properties, state_table

    name = state_table(options.output)
    if not driver_writes_available(spark) or not spark.catalog.tableExists(name):
        return False
    return state.overwrite(spark, name, state_properties(until, definition_fingerprint(options), state.open_records()))


def _keeps_state(target: Any, until: int | None, spec: WindowSpec, path: str, group_cols: list[str]) -> bool:
    """Whether a full run writes the window state (an Iceberg output of a path whose increments
    read it, :func:`lakehouse.window_incremental.uses_state`)."""
    return isinstance(target, IcebergTable) and until is not None and uses_state(spec, path, group_cols)


def _commit_properties(target: Any, properties: dict[str, str]) -> None:
    """A commit that adds no files, only ``properties`` in its snapshot summary (the bookmark of
    rows written by the commit before it)."""
    append = target.java_table().newFastAppend()
    for key, value in properties.items():
        append = append.set(key, value)
    append.commit()
    target.refresh()


def _write_output(spark: "SparkSession", windows: "DataFrame", options: WindowRecomputeOptions,
                  say: Callable[[str], None], properties: dict[str, str] | None = None, sort: bool = True,
                  counted: Callable[[], int | None] | None = None) -> int:
    """Create or replace the output table with ``windows``; returns its row count (observed while
    writing, not read back; ``counted``: the count after the write, from whatever computed the rows,
    e.g. the loop's figures, so that no observation evaluates every row)."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    fmt = resolve_format(options.output, options.output_format)
    target = open_table(spark, options.output, fmt, options.default_catalog)
    # sorted within each task, not globally (a global sort samples its input first, which runs the
    # whole window computation twice); by the group's hash first, a long that Spark's sort
    # compares by its prefix, then key and end (per key the order of (start, end) too)
    if "__gh" not in windows.columns:
        windows = windows.withColumn("__gh", group_hash(["key"]))
    if sort:
        windows = windows.sortWithinPartitions("__gh", "key", "window_end")
    windows = windows.select(*OUTPUT_COLUMNS)
    if counted is None:
        written = Observation(f"windows_written_{uuid.uuid4().hex}")
        windows = windows.observe(written, F.count(F.lit(1)).alias("rows"))
        counted = lambda: written.get["rows"]  # noqa: E731
    if fmt == "iceberg":
        writer = windows.writeTo(target.sql_name).using("iceberg")
        for key, value in (properties or {}).items():  # in the summary of the commit that writes the rows
            writer = writer.option(f"snapshot-property.{key}", value)
        if target.exists():
            writer.replace()
        else:
            spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {target.sql_name.rsplit('.', 1)[0]}")
            writer.create()
    else:
        assert isinstance(target, DeltaTable)
        (windows.write.format("delta").mode("overwrite").option("overwriteSchema", "true")
         .save(target.location))
        target.declare()
    rows = int(counted() or 0)
    say(f"windows: wrote {rows} window rows to {options.output} ({fmt})")
    return rows

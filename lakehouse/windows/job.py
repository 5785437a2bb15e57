"""The ``windows`` job: recompute the edge's time windows in batch, with the edge's exact semantics.

The edge emits ``tumbling_window(...).mean().final()`` results as it reads Kafka; this job reads
the raw records back from a lake table and produces the same rows, for backfills, for a changed
window definition, or to check the edge. One run:

1. plans (:mod:`lakehouse.windows.incremental`): an *incremental* run from the bookmark the
   output's last commit recorded, or a *full* one;
2. computes the rows on the *native* engine (Spark's operators) or the *python-engine* (the edge's
   engines in ``applyInArrow``), whichever the definition allows (:mod:`lakehouse.windows.plan`);
3. commits them with the bookmark in one commit that is valid only if no other commit reached the
   output since step 1 (:mod:`lakehouse.windows.commit`); otherwise it plans again, once;
4. reports, naming the engine and the mode (``path incremental, native``).

What "the same input" means: the edge sees each Kafka partition in offset order and keys are
independent, so the job groups by key (``--closing key``, the edge's default) or by Kafka
partition (``--closing partition``) and feeds each group in offset order. The lake table must
carry the offsets: write it with ``DataLakeSink(include_kafka_metadata=True)`` (columns
``_kafka_key``, ``_kafka_timestamp``, ``_kafka_partition``, ``_kafka_offset``), or name other
columns with ``--order-by``. Rows whose key is NULL are ignored, as on the edge; rows whose
timestamp or value is NULL are counted and skipped (the edge would have failed on them), and so
are rows whose order or partition column is NULL (they have no place in the offset order).

Output: one row per emitted window, ``key``, ``window_start``, ``window_end`` (epoch ms, start
inclusive; sliding windows include their end, as on the edge) and ``value``.

Example::

    spec = WindowSpec.parse("tumbling", "1s", aggregation="mean")
    report = run_window_recompute(spark, WindowRecomputeOptions(
        table="lake.db.sensor_readings", output="lake.db.sensor_temp_1s",
        value_column="temp", window=spec))
    print(report.summary_line())
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING, Callable

from lakehouse.fault_injection import pause_point
from lakehouse.windows.commit import ConcurrentRunError, commit_output, writes_in_two_steps
from lakehouse.windows.definition import WindowRecomputeOptions, WindowReport
from lakehouse.windows.history import bookmark_properties, main_snapshot
from lakehouse.windows.incremental import plan_increment, run_increment
from lakehouse.windows.plan import (OutputChange, WindowRun, compute_windows, open_window_table,
                                   output_schema)
from lakehouse.windows.state import drop_state, save_full_state

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

log = logging.getLogger("lakehouse.windows")

__all__ = ("run_window_recompute",)

#: how many times a run plans again after another run committed to the output first
CONCURRENT_RETRIES = 1


def run_window_recompute(spark: "SparkSession", options: WindowRecomputeOptions,
                         progress: Callable[[str], None] | None = None) -> WindowReport:
    """Recompute the windows of ``options.table`` into ``options.output``; returns the report.

    Raises :class:`lakehouse.windows.commit.ConcurrentRunError` when other runs kept committing
    to the output first (after :data:`CONCURRENT_RETRIES` new plans)."""
    say = progress or log.info
    for attempt in range(CONCURRENT_RETRIES + 1):
        try:
            return _run_once(spark, options, say)
        except ConcurrentRunError as error:
            if attempt == CONCURRENT_RETRIES:
                raise
            say(f"windows: {error}; planning again from the output's new bookmark")
    raise AssertionError("unreachable")  # pragma: no cover


def _open_run(spark: "SparkSession", options: WindowRecomputeOptions, say: Callable[[str], None]) -> WindowRun:
    source = open_window_table(spark, options.table, options.table_format, options.default_catalog)
    if not source.exists():
        raise ValueError(f"table {options.table} does not exist")
    target = open_window_table(spark, options.output, options.output_format, options.default_catalog)
    columns = spark.table(source.sql_name).columns
    return WindowRun.open(spark, options, say, source, target, columns)


def _run_once(spark: "SparkSession", options: WindowRecomputeOptions, say: Callable[[str], None]) -> WindowReport:
    started = time.monotonic()
    run = _open_run(spark, options, say)
    report = WindowReport(options.table, options.output, run.spec.describe(), engine=run.engine)
    plan = plan_increment(run)
    increment = run_increment(run, plan) if plan is not None else None
    if plan is not None and increment is not None:
        try:
            report.windows = commit_output(run, increment.change)
        finally:
            if increment.state_write is not None:
                increment.state_write.exception()  # wait: no job left running (the write reads the cached state)
            for cached in increment.cached:
                cached.unpersist()  # a long-lived session (a Spark Connect server) keeps nothing of the run
        if increment.state_write is not None and increment.state_write.exception() is not None:
            # the state only saves the next run a scan: one that does not match the output's
            # bookmark is rebuilt (a concurrent run's overwrite of the same table can conflict)
            say(f"windows: the window state was not written ({increment.state_write.exception()}); "
                "the next run rebuilds it from the source")
        pause_point("windows.after-commit")
        report.mode, report.rows_read, report.detail = "incremental", increment.new_rows, increment.detail
        report.seconds = time.monotonic() - started
        say(f"windows: {report.rows_read} new rows since source snapshot {plan.since}; "
            f"{report.windows} window rows added or replaced")
        return report
    return _full_run(run, report, started)


def _full_run(run: WindowRun, report: WindowReport, started: float) -> WindowReport:
    """Every window from the source's current snapshot; then the window state increments start from."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    spark, options, say = run.spark, run.options, run.say
    until = main_snapshot(spark, run.source.sql_name) if run.source.table_format == "iceberg" else None
    raw = run.source_at(until)
    data = run.prepare(raw)
    value_type = run.value_type(data)
    say(f"windows: {options.table}; {run.spec.describe()}; engine {run.engine}")
    read = Observation(f"windows_read_{uuid.uuid4().hex}")
    complete = F.expr(run.complete)
    data = data.observe(read, F.count(F.lit(1)).alias("rows"),
                        F.sum(F.when(complete, 0).otherwise(1)).alias("skipped")).where(complete)
    plain = run.prepare(raw).where(complete)  # the same rows, unobserved (compute_windows says why)
    # an existing Iceberg output of the same columns takes two writes on the run's branch (the
    # cheaper proven plan first); creating or replacing a table writes one plan's rows
    two_step = writes_in_two_steps(run, output_schema(data, value_type))
    rows, note = compute_windows(data, run.spec, run.order_cols, run.group_cols, value_type, run.engine,
                                 plain=plain, two_step=two_step)
    change = OutputChange("full", [rows], None, bookmark_properties(until, run.fingerprint))
    if note.first_rows is not None and note.rest is not None:
        change.split = (note.first_rows, note.rest)
    report.windows = commit_output(run, change)
    say(f"windows: wrote {report.windows} window rows to {options.output} ({run.target.table_format})")
    if until is not None and run.uses_state and run.spec.kind == "sliding" and note.replayed():
        # the sliding increments' state holds closed-form groups only: increments replace keys instead
        drop_state(spark, options)
    elif until is not None and run.uses_state:  # what the next incremental run starts from
        save_full_state(run.prepare(raw).where(run.complete), options, run.group_cols, run.order_cols, until,
                        run.fingerprint, note.state_floor())
    pause_point("windows.after-commit")
    counts = read.get
    report.rows_read, report.rows_skipped = int(counts["rows"] or 0), int(counts["skipped"] or 0)
    report.groups = note.groups(data, run.group_cols)
    report.detail = note.detail()
    report.seconds = time.monotonic() - started
    say(f"windows: {report.rows_read} rows, {report.groups} groups in {options.table}")
    return report

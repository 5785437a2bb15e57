"""The ``windows`` job: recompute the edge's time windows in batch, with the edge's exact semantics.

The edge emits ``tumbling_window(...).mean().final()`` results as it reads Kafka; this job reads
the raw records back from a lake table and produces the same rows, for backfills, for a changed
window definition, or to check the edge. One run:

1. gathers the facts (the output, the bookmark its last commit recorded:
   :mod:`lakehouse.windows.incremental`) and chooses a named strategy
   (:func:`lakehouse.windows.strategy.choose_strategy`: ``exact``, ``proven-then-patch``,
   ``tail-append``, ``merge-keys``, ``nothing-new``);
2. computes the rows on the *native* engine (Spark's operators) or the *python-engine* (the edge's
   engines in ``applyInArrow``), whichever the definition allows (:mod:`lakehouse.windows.plan`);
3. hands the writes to one transaction that publishes them with the bookmark, valid only if no
   other commit reached the output since step 1 (:mod:`lakehouse.windows.commit`); otherwise it
   plans again, once;
4. reports, naming the mode, the engine, the strategy and why, and the keys that fell back.

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
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from lakehouse.fault_injection import pause_point
from lakehouse.windows.commit import ConcurrentRunError, OutputTransaction, WriteStep, record_late_records
from lakehouse.windows.definition import WindowRecomputeOptions, WindowReport
from lakehouse.windows.history import bookmark_properties, main_snapshot
from lakehouse.windows.incremental import IncrementPlan, plan_increment, run_increment
from lakehouse.windows.plan import (WindowRun, compute_windows, fallback_windows, open_window_table, output_schema,
                                   proven_windows)
from lakehouse.windows.proven import provable
from lakehouse.windows.state import save_full_state
from lakehouse.windows.strategy import RunFacts, choose_strategy

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("lakehouse.windows")

__all__ = ("explain_window_recompute", "run_window_recompute")

#: how many times a run plans again after another run committed to the output first
CONCURRENT_RETRIES = 1
#: how many of the keys that fell back the report names
NAMED_KEYS = 5


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


def explain_window_recompute(spark: "SparkSession", options: WindowRecomputeOptions,
                             progress: Callable[[str], None] | None = None) -> str:
    """The strategy a run would take now and why, with the Spark plan of its first write's rows
    (a full run's) printed by ``progress``; nothing is computed or written."""
    say = progress or log.info
    run = _open_run(spark, options, say)
    plan, why_not = plan_increment(run)
    strategy, reason = choose_strategy(_facts(run, plan, why_not))
    if strategy in ("exact", "proven-then-patch"):
        data = run.prepare(run.source_at(None)).where(run.complete)
        value_type = run.value_type(data)
        rows = (proven_windows(data, run.grouping, value_type)[0] if strategy == "proven-then-patch"
                else compute_windows(data, run.grouping, value_type, run.engine, plain=data)[0])
        say(f"windows: the Spark plan of the rows the {strategy} strategy writes first:")
        rows.explain()
    return f"strategy {strategy}: {reason}"


def _open_run(spark: "SparkSession", options: WindowRecomputeOptions, say: Callable[[str], None]) -> WindowRun:
    source = open_window_table(spark, options.table, options.table_format, options.default_catalog)
    if not source.exists():
        raise ValueError(f"table {options.table} does not exist")
    target = open_window_table(spark, options.output, options.output_format, options.default_catalog)
    columns = spark.table(source.sql_name).columns
    return WindowRun.open(spark, options, say, source, target, columns)


def _facts(run: WindowRun, plan: IncrementPlan | None, why_not: str | None) -> RunFacts:
    """What the run knows before computing: the output (catalog reads), the bookmark's plan."""
    target = run.target
    if target.table_format != "iceberg":
        output = "delta"
    elif not target.exists():
        output = "missing"
    else:
        data = run.prepare(run.spark.table(run.source.sql_name))  # its schema only: no job
        current = run.spark.table(target.sql_name).schema
        wanted = output_schema(data, run.value_type(data))
        same = [(f.name, f.dataType) for f in current.fields] == [(f.name, f.dataType) for f in wanted.fields]
        output = "existing" if same and run.base_snapshot is not None else "other-columns"
    return RunFacts(native=run.engine == "native", provable=provable(run.grouping),
                    output=output, full=run.options.full, increment=why_not,
                    new_snapshot=plan is None or plan.since != plan.until, sliding=run.spec.kind == "sliding",
                    per_key="key" in run.group_cols, has_state=plan is not None and plan.state_log is not None,
                    late_records=run.late_records)


def _named(keys: "DataFrame", count: int) -> str:
    """``count`` keys, the first :data:`NAMED_KEYS` of them named."""
    names = [str(row["key"]) for row in keys.limit(NAMED_KEYS).collect()]
    more = f", ... ({count} in all)" if count > len(names) else ""
    return f"{count} key{'' if count == 1 else 's'} ({', '.join(names)}{more})"


def _run_once(spark: "SparkSession", options: WindowRecomputeOptions, say: Callable[[str], None]) -> WindowReport:
    started = time.monotonic()
    run = _open_run(spark, options, say)
    plan, why_not = plan_increment(run)
    facts = _facts(run, plan, why_not)
    strategy, reason = choose_strategy(facts)
    say(f"windows: strategy {strategy}: {reason}")
    report = WindowReport(options.table, options.output, run.spec.describe(), engine=run.engine,
                          strategy=strategy, reason=reason)
    if plan is not None and strategy == "nothing-new":
        report.mode, report.detail = "incremental", "no new source snapshot"
        report.seconds = time.monotonic() - started
        return report
    increment = run_increment(run, plan, strategy) if plan is not None else None
    if plan is not None and increment is not None:
        try:
            properties = bookmark_properties(plan.until, run.fingerprint, run.late_records)  # the count carried
            with OutputTransaction(run, properties, "existing") as commit:
                report.windows = commit.write(increment.step)
                commit.publish()
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
        if increment.replaced_keys is not None:
            replaced = increment.replaced_keys.count()
            if replaced:
                report.fallback = f"{_named(increment.replaced_keys, replaced)} recomputed whole"
        report.seconds = time.monotonic() - started
        say(f"windows: {report.rows_read} new rows since source snapshot {plan.since}; "
            f"{report.windows} window rows added or replaced")
        return report
    if plan is not None:  # the increment found it cannot be one: a full run
        why_not = "a partition closing its windows got records between its old ones"
        report.strategy, report.reason = choose_strategy(replace(facts, increment=why_not))
        say(f"windows: strategy {report.strategy}: {report.reason}")
    return _full_run(run, report, facts.output, started)


def _full_run(run: WindowRun, report: WindowReport, output: str, started: float) -> WindowReport:
    """Every window from the source's current snapshot, by the report's strategy (``exact`` or
    ``proven-then-patch``); then the window state increments start from."""
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
    proven = report.strategy == "proven-then-patch"
    if proven:
        rows, note = proven_windows(data, run.grouping, value_type)
    else:
        rows, note = compute_windows(data, run.grouping, value_type, run.engine, plain=plain)
    with OutputTransaction(run, bookmark_properties(until, run.fingerprint), output) as commit:
        report.windows = commit.write(WriteStep("overwrite", rows))
        replaying = note  # the plan whose replayed keys the state marks
        replayed = note.replayed()  # observed by the write (never before it: the read would wait for it)
        groups = note.unproven_groups(spark, plain, run.group_cols) if proven else None  # observed by the write
        if groups is not None:  # the groups it could not prove, by the exact plan, added on the run's branch
            rows, replaying = fallback_windows(plain, run.grouping, value_type, groups)
            report.windows += commit.write(WriteStep("append", rows))
            replayed, keys = replaying.replayed(), groups.select("key").distinct()
            why = "by the exact plan: not proven on time (a record later than the grace period, near time 0, or NaN " \
                  "under min/max)"
            count = keys.count()
            report.fallback, report.detail = f"{_named(keys, count)} {why}", f"{count} key{'' if count == 1 else 's'} {why}"
            if replayed:
                report.detail += f"; {replaying.detail(note.groups())}"
        commit.publish()
    # the records found late: none in the groups the proven plan proved, the exact plan's count elsewhere
    record_late_records(run, until, (replaying.late() if groups is not None else 0) if proven else note.late())
    say(f"windows: wrote {report.windows} window rows to {options.output} ({run.target.table_format})")
    if until is not None and run.uses_state:  # what the next incremental run starts from
        # sliding: the groups the edge's engines computed are marked, their increments replace their keys
        marked = replaying.replayed_keys(spark, data.schema["key"].dataType) if replayed else None
        save_full_state(run.prepare(raw).where(run.complete), options, run.grouping, until, run.fingerprint,
                        note.state_floor(), marked)
    pause_point("windows.after-commit")
    counts = read.get
    report.rows_read, report.rows_skipped = int(counts["rows"] or 0), int(counts["skipped"] or 0)
    report.groups = note.groups(data, run.group_cols)
    report.detail = report.detail or note.detail()
    report.seconds = time.monotonic() - started
    say(f"windows: {report.rows_read} rows, {report.groups} groups in {options.table}")
    return report

"""Incremental window recompute on real Spark and Iceberg: after any sequence of appends and
incremental runs the output equals a full recompute (and the edge), row for row; a driver killed
around the output commit leaves a table that the rerun brings to the same result; two runs at once
never add a window twice; maintenance of the output or the source never turns the next run into a
full one."""

from __future__ import annotations

import dataclasses
import math
import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_testkit import run_job

from lakehouse.windows import (ConcurrentRunError, WindowRecomputeOptions, WindowSpec, explain_window_recompute,
                               run_window_recompute)
from lakehouse.windows import commit as window_commit
from lakehouse.windows import job as window_job
from lakehouse.windows import state as window_state
from lakehouse.windows.history import (SOURCE_SNAPSHOT_PROPERTY, Bookmark, Snapshot,
                                       bookmark_of, late_records_of, main_snapshot, table_log)
from lakehouse.windows.state import STATE_SNAPSHOT_PROPERTY, state_sql_name, state_table
from stream_edge.dataframe.windows.replay import make_engine, replay

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SCHEMA = "_kafka_key string, _kafka_timestamp bigint, _kafka_partition int, _kafka_offset bigint, temp bigint"
SPECS = {
    "tumbling": WindowSpec.parse("tumbling", "40ms", grace="10ms", aggregation="sum"),
    "hopping": WindowSpec.parse("hopping", "60ms", step="20ms", grace="5ms", aggregation="max"),
    "sliding": WindowSpec.parse("sliding", "30ms", grace="10ms", aggregation="count"),
}


def stream(raw: list[tuple[int, int, int, int]]) -> list[tuple]:
    """(key, ts, partition, offset, value): key k0 is written to both partitions (a custom
    partitioner), the others to one; event time advances with some records arriving late."""
    clock, offsets, rows = 200, [0, 0], []
    for key_index, step, back, value in raw:
        clock += step
        key = f"k{key_index}"
        partition = (value % 2) if key_index == 0 else key_index % 2
        rows.append((key, max(1, clock - back), partition, offsets[partition], value))
        offsets[partition] += 1
    return rows


def edge_windows(rows: list[tuple], spec: WindowSpec) -> list[tuple]:
    """What the edge's ``final()`` emits: each partition in offset order through its engines."""
    out = []
    for partition in (0, 1):
        ordered = sorted((r for r in rows if r[2] == partition), key=lambda r: r[3])
        out += [(w["key"], w["start"], w["end"], w["value"]) for w in replay(
            [(r[0], r[1], r[4]) for r in ordered], kind=spec.kind, duration_ms=spec.duration_ms,
            grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation,
            closing_strategy=spec.closing)]
    return sorted(out)


def edge_late_records(rows: list[tuple], spec: WindowSpec) -> int:
    """The records the edge's engines find late for some window (their ``on_late`` callback), each
    counted once: each partition in offset order, as :func:`edge_windows` feeds them."""
    late: set[tuple] = set()
    engine = make_engine(spec.kind, spec.duration_ms, spec.grace_ms, spec.step_ms, spec.aggregation)
    for partition in (0, 1):
        states: dict = {}
        for key, ts, _, offset, value in sorted((r for r in rows if r[2] == partition), key=lambda r: r[3]):
            engine.on_late = lambda *_args, record=(partition, offset): late.add(record)
            list(engine.process_final(states.setdefault(key, engine.new_key_state()), value, ts))
    return len(late)


def fresh_namespace(spark) -> str:
    """A new namespace of the embedded catalog (``embedded.inc_<id>``) for one test's tables."""
    namespace = f"embedded.inc_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    return namespace


def fresh_run(spark, spec: WindowSpec) -> tuple[str, str, WindowRecomputeOptions]:
    """(source, output, the options of a run from one to the other) in a fresh namespace."""
    namespace = fresh_namespace(spark)
    source, output = f"{namespace}.src", f"{namespace}.out"
    return source, output, WindowRecomputeOptions(table=source, output=output, value_column="temp", window=spec)


def snapshot_log(spark, table: str) -> dict[int, Snapshot]:
    """Every snapshot the table still knows, by id."""
    return table_log(spark, table).snapshots


def read_bookmark(spark, table: str) -> Bookmark | None:
    """The table's bookmark as ``main`` sees it, with the late records its rows were computed with
    (carried in the commit, or the table property a full run sets after it)."""
    log = table_log(spark, table)
    mark = bookmark_of(log.snapshots, log.main)
    if mark is None:
        return None
    properties = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    return dataclasses.replace(mark, late_records=late_records_of(mark, properties))


def state_bookmark(spark, options: WindowRecomputeOptions) -> tuple[str | None]:
    """(the source snapshot,) the window state table's current snapshot records."""
    log = table_log(spark, state_sql_name(options))
    return (log.snapshots[log.main].summary.get(STATE_SNAPSHOT_PROPERTY),)


def table_rows(spark, table: str) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {table}")
    return sorted((r.key, r.window_start, r.window_end, r.value) for r in spark.table(table).collect())


#: the oracle's definitions: floating values (NaN under max and min follows the edge's rule)
ORACLE_SPECS = {
    "tumbling": WindowSpec.parse("tumbling", "40ms", grace="10ms", aggregation="sum"),
    "hopping": WindowSpec.parse("hopping", "60ms", step="20ms", grace="5ms", aggregation="max"),
    "sliding": WindowSpec.parse("sliding", "30ms", grace="10ms", aggregation="min"),
}
ORACLE_SCHEMA = "_kafka_key string, _kafka_timestamp bigint, _kafka_partition int, _kafka_offset bigint, temp double"
#: (key, step, how far back, value 0-9: 7 is NaN, whether the offset is NULL)
RAW = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12), st.sampled_from([0, 0, 0, 3, 15, 50]),
                         st.integers(0, 9), st.sampled_from([False] * 7 + [True])), min_size=4, max_size=50)


def oracle_stream(raw: list[tuple]) -> list[tuple]:
    """:func:`stream` with quarter values (their sums are exact in any order), NaN, and records
    without an offset (a row a user wrote into the lake by hand), ``back`` ms ahead of the clock:
    in Spark's ascending sort their NULL comes first, where a large timestamp would close windows."""
    rows = stream([r[:4] for r in raw])
    out = []
    for (key, ts, partition, offset, value), (*_, no_offset) in zip(rows, raw):
        temp = math.nan if value == 7 else value / 4
        out.append((key, ts + 100, partition, None, temp) if no_offset else (key, ts, partition, offset, temp))
    return out


def comparable(rows: list[tuple]) -> list[tuple]:
    """Rows with NaN as a string (NaN is unequal to itself), sorted."""
    return sorted((*r[:3], "NaN" if isinstance(r[3], float) and math.isnan(r[3]) else r[3]) for r in rows)


@pytest.mark.timeout(1800)  # five examples of up to five window jobs each, on 2 cores shared with the suite
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(raw=RAW, batches=st.lists(st.integers(0, 2), min_size=50, max_size=50), kind=st.sampled_from(list(SPECS)),
       in_order=st.booleans())
def test_full_reruns_equal_the_runs_they_repeat(spark, raw, batches, kind, in_order):
    """The general oracle, through every plan: a ``--full`` rerun into the output the first run
    created (sliding: the proven plan, its unproven keys by the exact one) equals that first run (the
    exact plan); after the increments that follow more appends (tail groups, replaced keys), a
    ``--full`` rerun equals their result; both equal the edge. Streams hold late records (past
    the grace), NaN, records without an offset (counted and skipped by every plan), and a key on
    two Kafka partitions. With ``in_order`` each append holds later offsets (the sink's normal
    order), else a batch can hold offsets older than an earlier one's (a file registered late)."""
    rows = oracle_stream(raw)
    ordered = [r for r in rows if r[3] is not None]  # what the edge saw
    assignment = sorted(batches[:len(rows)]) if in_order else batches[:len(rows)]
    spec = ORACLE_SPECS[kind]
    source, output, options = fresh_run(spark, spec)
    rerun = WindowRecomputeOptions(table=source, output=output, value_column="temp", window=spec, full=True)
    quiet = lambda _l: None  # noqa: E731
    try:
        paths, strategies, appended = [], [], []
        for number in range(3):
            part = [r for r, b in zip(rows, assignment) if b == number]
            if not part:
                continue
            appended += part
            df = spark.createDataFrame(part, ORACLE_SCHEMA)
            if spark.catalog.tableExists(source):
                df.writeTo(source).append()
            else:
                df.writeTo(source).using("iceberg").create()
            report = run_window_recompute(spark, options, progress=quiet)
            paths.append(report.path)
            strategies.append(report.strategy)
            if len(paths) == 1:
                seen = [r for r in appended if r[3] is not None]
                created = comparable(table_rows(spark, output))
                assert created == comparable(edge_windows(seen, spec))
                # the late records the first run recorded (sliding: those dropped; the engines also
                # call on_late for accepted records inside closed windows) choose the rerun's plan
                late = read_bookmark(spark, output).late_records
                assert (0 <= late <= len(seen)) if kind == "sliding" else (late == edge_late_records(seen, spec))
                again = run_window_recompute(spark, rerun, progress=quiet).strategy
                assert again == ("exact" if kind != "sliding" and late else "proven-then-patch")
                assert comparable(table_rows(spark, output)) == created
                assert read_bookmark(spark, output).late_records == late  # counted again, by either plan
        assert paths[0].startswith("full, native")  # the first run has no bookmark
        assert all(p.startswith("incremental, native") for p in paths[1:])
        assert strategies[0] == "exact" and set(strategies[1:]) <= {"tail-append", "merge-keys"}
        incremented = comparable(table_rows(spark, output))
        assert incremented == comparable(edge_windows(ordered, spec))
        report = run_window_recompute(spark, rerun, progress=quiet)
        assert report.rows_skipped == len(rows) - len(ordered)
        assert comparable(table_rows(spark, output)) == incremented
        if kind != "sliding":
            assert read_bookmark(spark, output).late_records == edge_late_records(ordered, spec)
    finally:
        for table in (source, output, state_table(output)):
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_only_new_windows_are_added_and_nothing_is_read_twice(spark, monkeypatch):
    """In-order appends: the run adds the windows that closed, keeps the emitted ones, records the
    new snapshot and the window state beside it; a state that does not match the bookmark is
    rebuilt; a run with no new snapshot changes nothing; --full recomputes, and the next increment
    starts from the state it wrote."""
    rng = random.Random(5)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 15]), rng.randrange(10))
                   for _ in range(450)])
    spec = SPECS["tumbling"]
    source, output, options = fresh_run(spark, spec)
    spark.createDataFrame(rows[:300], SCHEMA).writeTo(source).using("iceberg").create()
    first = run_window_recompute(spark, options, progress=lambda _l: None)
    assert first.path == "full, native"
    before = table_rows(spark, output)
    spark.createDataFrame(rows[300:350], SCHEMA).writeTo(source).append()
    said: list[str] = []
    second = run_window_recompute(spark, options, progress=said.append)
    after = table_rows(spark, output)
    assert (first.rows_read, second.rows_read) == (300, 50)
    assert second.path == "incremental, native"
    assert set(before) <= set(after) and second.windows == len(after) - len(before) > 0
    assert after == edge_windows(rows[:350], spec)
    # the old records' per-group state came from the state table, not from a scan of the old snapshot
    assert not [line for line in said if "rebuilding" in line]
    snapshot = main_snapshot(spark, source)
    assert read_bookmark(spark, output).source_snapshot == snapshot
    state = state_table(output)
    assert state_bookmark(spark, options)[0] == str(snapshot)
    # the state's rows were overwritten in place (one plain commit), not the table replaced
    assert snapshot_log(spark, state)[main_snapshot(spark, state)].operation == "overwrite"
    # a state that does not match the output's bookmark is not trusted: rebuilt, same result
    spark.sql(f"DROP TABLE {state}")
    spark.createDataFrame(rows[350:400], SCHEMA).writeTo(source).append()
    said.clear()
    assert run_window_recompute(spark, options, progress=said.append).rows_read == 50
    assert [line for line in said if "rebuilding" in line]
    after = table_rows(spark, output)
    assert after == edge_windows(rows[:400], spec)
    output_head = main_snapshot(spark, output)
    idle = run_window_recompute(spark, options, progress=lambda _l: None)
    assert (idle.rows_read, idle.windows, idle.path) == (0, 0, "incremental, native (no new source snapshot)")
    assert main_snapshot(spark, output) == output_head  # no commit at all
    options.full = True
    assert run_window_recompute(spark, options, progress=lambda _l: None).rows_read == 400
    assert table_rows(spark, output) == after
    options.full = False
    spark.createDataFrame(rows[400:], SCHEMA).writeTo(source).append()
    said.clear()
    monkeypatch.setattr(window_state, "STATE_SNAPSHOTS_KEPT", 1)  # past 2 snapshots, the older expire
    last = run_window_recompute(spark, options, progress=said.append)
    assert len(snapshot_log(spark, state)) == 1
    assert (last.rows_read, last.path) == (50, "incremental, native")
    assert not [line for line in said if "rebuilding" in line]  # the full run's state is trusted
    assert table_rows(spark, output) == edge_windows(rows, spec)
    # every run branch is gone: each was fast-forwarded into main and dropped
    assert [r.name for r in spark.sql(f"SELECT name FROM {output}.refs").collect()] == ["main"]
    for table in (source, output, state):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_sliding_increments_add_the_closing_windows_from_the_state(spark):
    """Sliding windows, in-order appends within the grace: each increment adds the windows that
    close now from the window state and the new records (no key recomputed); an append with a
    record inside an already-closed window makes the run recompute that key, marked in the state,
    and the following runs too when it changes; a full run that replays it (proven, then patched)
    still writes the state, so the next increment takes the tail. The output equals the edge's
    after every run, and a ``--full`` run's."""
    rng = random.Random(7)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 8]), rng.randrange(10))
                   for _ in range(400)])
    spec = SPECS["sliding"]
    source, output, options = fresh_run(spark, spec)
    quiet = lambda _l: None  # noqa: E731
    try:
        spark.createDataFrame(rows[:200], SCHEMA).writeTo(source).using("iceberg").create()
        assert run_window_recompute(spark, options, progress=quiet).path == "full, native"
        assert state_bookmark(spark, options)[0] == str(main_snapshot(spark, source))
        for end in (260, 300):
            spark.createDataFrame(rows[end - (60 if end == 260 else 40):end], SCHEMA).writeTo(source).append()
            report = run_window_recompute(spark, options, progress=quiet)
            assert report.path == "incremental, native" and report.windows > 0  # appended, no key recomputed
            assert table_rows(spark, output) == edge_windows(rows[:end], spec)
            assert state_bookmark(spark, options)[0] == str(main_snapshot(spark, source))
        # k1's record 20 ms behind its event time: inside windows closed already (grace 10 ms)
        latest = max(r[1] for r in rows[:300] if r[0] == "k1" and r[2] == 1)
        awkward = ("k1", latest - 20, 1, max(r[3] for r in rows[:300] if r[2] == 1) + 1, 5)
        spark.createDataFrame([awkward], SCHEMA).writeTo(source).append()
        said: list[str] = []
        report = run_window_recompute(spark, options, progress=said.append)
        assert report.path == "incremental, native (1 keys recomputed)", said
        assert (report.strategy, report.fallback) == ("tail-append", "1 key (k1) recomputed whole")
        assert [line for line in said if "an awkward one" in line]
        assert table_rows(spark, output) == edge_windows(rows[:300] + [awkward], spec)
        shifted = [(k, ts, p, o + 1 if p == 1 else o, v) for k, ts, p, o, v in rows[300:]]
        spark.createDataFrame(shifted, SCHEMA).writeTo(source).append()
        report = run_window_recompute(spark, options, progress=quiet)
        assert report.path.startswith("incremental, native (") and "keys recomputed" in report.path
        assert table_rows(spark, output) == edge_windows(rows[:300] + [awkward] + shifted, spec)
        assert state_bookmark(spark, options)[0] == str(main_snapshot(spark, source))  # k1 marked, state advanced
        # a full run into the table: the proven plan's rows, then k1's (later than the grace
        # period, replayed by the exact plan) replacing its rows on the same branch, one commit on
        # main; the state of every group, k1 marked replayed
        options.full = True
        head = main_snapshot(spark, output)
        assert explain_window_recompute(spark, options, progress=quiet).startswith(
            "strategy proven-then-patch: --full into the existing output")
        assert main_snapshot(spark, output) == head  # explained, not run
        report = run_window_recompute(spark, options, progress=quiet)
        assert report.path.startswith("full, native (1 key by the exact plan: not proven on time")
        assert (report.strategy, report.fallback) == ("proven-then-patch", "1 key (k1) by the exact plan: not proven "
                                                      "on time (a record later than the grace period, near time 0, "
                                                      "or NaN under min/max)")
        assert "; 1 of 5 keys through the edge's engines" in report.path
        assert table_rows(spark, output) == edge_windows(rows[:300] + [awkward] + shifted, spec)
        assert snapshot_log(spark, output)[main_snapshot(spark, output)].parent_id != head  # two writes
        assert [r.key for r in spark.table(state_table(output)).where("replayed").collect()] == ["k1"]
        # the increment after that fallback run: k2 and k3 (in order, within the grace) by the tail
        written = rows[:300] + [awkward] + shifted
        top, offsets = max(r[1] for r in written), [max(r[3] for r in written if r[2] == p) for p in (0, 1)]
        more = [(f"k{2 + i % 2}", top + 3 * i, i % 2, offsets[i % 2] + 1 + i // 2, i) for i in range(40)]
        spark.createDataFrame(more, SCHEMA).writeTo(source).append()
        options.full = False
        report = run_window_recompute(spark, options, progress=quiet)
        assert (report.path, report.strategy, report.fallback) == ("incremental, native", "tail-append", "")
        incremented = table_rows(spark, output)
        assert incremented == edge_windows(written + more, spec)
        options.full = True
        assert run_window_recompute(spark, options, progress=quiet).strategy == "proven-then-patch"
        assert table_rows(spark, output) == incremented
    finally:
        for table in (source, output, state_table(output)):
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_fixed_windows_rerun_by_the_proven_plan_when_the_last_run_saw_no_late_record(spark):
    """Tumbling windows over records within the grace: the first run records 0 late records, so a
    ``--full`` rerun takes the proven plan (no sort by offset), same rows; an increment carries the
    count forward; after a record later than the grace, the next ``--full`` run (proven) patches
    its key by the exact plan and records 1, and the run after it takes the exact plan."""
    rng = random.Random(13)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3]), rng.randrange(10))
                   for _ in range(200)])
    spec = SPECS["tumbling"]
    source, output, options = fresh_run(spark, spec)
    quiet = lambda _l: None  # noqa: E731
    try:
        spark.createDataFrame(rows[:150], SCHEMA).writeTo(source).using("iceberg").create()
        assert run_window_recompute(spark, options, progress=quiet).strategy == "exact"
        assert read_bookmark(spark, output).late_records == 0
        created = table_rows(spark, output)
        options.full = True
        report = run_window_recompute(spark, options, progress=quiet)
        assert (report.strategy, report.fallback) == ("proven-then-patch", "")
        assert "the last run saw no record later than the grace" in report.reason
        assert table_rows(spark, output) == created == edge_windows(rows[:150], spec)
        # k1's record 100 ms behind its event time (grace 10 ms), after the others in offset order
        latest = max(r[1] for r in rows if r[0] == "k1")
        late = ("k1", latest - 100, 1, max(r[3] for r in rows if r[2] == 1) + 1, 5)
        spark.createDataFrame(rows[150:] + [late], SCHEMA).writeTo(source).append()
        options.full = False
        assert run_window_recompute(spark, options, progress=quiet).strategy == "tail-append"
        assert read_bookmark(spark, output).late_records == 0  # the last full run's, carried forward
        options.full = True
        report = run_window_recompute(spark, options, progress=quiet)
        assert (report.strategy, report.fallback[:10]) == ("proven-then-patch", "1 key (k1)")
        assert read_bookmark(spark, output).late_records == 1 == edge_late_records(rows + [late], spec)
        patched = table_rows(spark, output)
        assert patched == edge_windows(rows + [late], spec)
        report = run_window_recompute(spark, options, progress=quiet)
        assert (report.strategy, report.reason) == ("exact", "--full: fixed windows by the exact plan: the last "
                                                    "run saw 1 late records")
        assert table_rows(spark, output) == patched
    finally:
        for table in (source, output, state_table(output)):
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_two_runs_at_once_never_add_a_window_twice(spark, monkeypatch):
    """Run A computes its increment and, right before its commit, run B (a manual run beside the
    DAG's) runs and commits the same increment. A's commit notices that the output moved since it
    read its bookmark: nothing of A is published, A plans again from B's bookmark and finds nothing
    new. With no retry left, A refuses with a clear error instead."""
    rng = random.Random(11)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 15]), rng.randrange(10))
                   for _ in range(300)])
    source, output, options = fresh_run(spark, SPECS["hopping"])
    spark.createDataFrame(rows[:150], SCHEMA).writeTo(source).using("iceberg").create()
    run_window_recompute(spark, options, progress=lambda _l: None)
    interleaved: list[object] = []
    started: list[bool] = []

    def other_run_first(point: str) -> None:  # B runs whole while A waits at its commit
        if point == "windows.before-commit" and not started:
            started.append(True)
            interleaved.append(run_window_recompute(spark, options, progress=lambda _l: None))

    monkeypatch.setattr(window_commit, "pause_point", other_run_first)
    spark.createDataFrame(rows[150:220], SCHEMA).writeTo(source).append()
    said: list[str] = []
    report = run_window_recompute(spark, options, progress=said.append)
    assert interleaved and interleaved[0].path == "incremental, native" and interleaved[0].windows > 0
    assert [line for line in said if "another commit reached" in line and "planning again" in line]
    assert (report.windows, report.path) == (0, "incremental, native (no new source snapshot)")
    assert table_rows(spark, output) == edge_windows(rows[:220], SPECS["hopping"])  # no window twice

    interleaved.clear()
    started.clear()
    monkeypatch.setattr(window_job, "CONCURRENT_RETRIES", 0)
    spark.createDataFrame(rows[220:], SCHEMA).writeTo(source).append()
    with pytest.raises(ConcurrentRunError, match="another commit reached .* nothing of this run was published"):
        run_window_recompute(spark, options, progress=lambda _l: None)
    assert table_rows(spark, output) == edge_windows(rows, SPECS["hopping"])  # B's rows, once
    assert [r.name for r in spark.sql(f"SELECT name FROM {output}.refs").collect()] == ["main"]
    for table in (source, output, state_table(output)):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.parametrize("kind", ["tumbling", "sliding"])
def test_maintenance_never_makes_the_next_run_a_full_one(spark, kind):
    """The maintenance DAG rewrites the output's manifests and compacts its files (``replace``
    snapshots without a bookmark), and compacts the source: the next run is still an increment,
    and equals the edge."""
    rng = random.Random(3)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 15]), rng.randrange(10))
                   for _ in range(240)])
    namespace = f"inc_{uuid.uuid4().hex[:8]}"
    source, output = f"embedded.{namespace}.src", f"embedded.{namespace}.out"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS embedded.{namespace}")
    options = WindowRecomputeOptions(table=source, output=output, value_column="temp", window=SPECS[kind])
    spark.createDataFrame(rows[:120], SCHEMA).writeTo(source).using("iceberg").create()
    spark.createDataFrame(rows[120:160], SCHEMA).writeTo(source).append()
    run_window_recompute(spark, options, progress=lambda _l: None)
    spark.createDataFrame(rows[160:200], SCHEMA).writeTo(source).append()
    run_window_recompute(spark, options, progress=lambda _l: None)  # two output files at least
    for table in (f"{namespace}.out", f"{namespace}.src"):
        spark.sql(f"CALL embedded.system.rewrite_data_files(table => '{table}', "
                  "options => map('rewrite-all', 'true'))").collect()
        spark.sql(f"CALL embedded.system.rewrite_manifests(table => '{table}')").collect()
    assert snapshot_log(spark, output)[main_snapshot(spark, output)].operation == "replace"
    spark.createDataFrame(rows[200:], SCHEMA).writeTo(source).append()
    said: list[str] = []
    report = run_window_recompute(spark, options, progress=said.append)
    assert report.path.startswith("incremental, native"), said
    assert report.rows_read == len(rows) - 200
    assert table_rows(spark, output) == edge_windows(rows, SPECS[kind])
    for table in (source, output, state_table(output)):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.parametrize("point", ["windows.before-commit", "windows.after-commit"])
def test_driver_killed_around_the_output_commit_then_rerun(spark, make_target, point):
    """The windows job's driver (Python and JVM) is SIGKILLed just before or just after the commit
    that publishes the new windows with their bookmark; the rerun gives the full recompute's table."""
    target = make_target("embedded")
    source = target.name
    output = source.rsplit(".", 1)[0] + ".temp_windows"
    rng = random.Random(9)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 15]), rng.randrange(10))
                   for _ in range(300)])
    spec = SPECS["hopping"]
    args = ["windows", "--table", source, "--output", output, "--kind", "hopping", "--duration", "60ms",
            "--step", "20ms", "--grace", "5ms", "--aggregation", "max", "--value-column", "temp"]
    spark.createDataFrame(rows[:200], SCHEMA).writeTo(source).using("iceberg").create()
    code, out, err = run_job(args, target.env)
    assert code == 0, err[-3000:]
    spark.createDataFrame(rows[200:], SCHEMA).writeTo(source).append()
    run_job(args, target.env, pause_at=point)
    spark.sql(f"REFRESH TABLE {output}")
    bookmark = read_bookmark(spark, output)
    current = main_snapshot(spark, source)
    assert (bookmark.source_snapshot == current) == (point == "windows.after-commit")
    code, out, err = run_job(args, target.env)
    assert code == 0, err[-3000:]
    assert ("no new source snapshot" in out) == (point == "windows.after-commit")
    assert table_rows(spark, output) == edge_windows(rows, spec)
    head = snapshot_log(spark, output)[main_snapshot(spark, output)]
    assert head.summary.get(SOURCE_SNAPSHOT_PROPERTY) == str(current)
    spark.sql(f"DROP TABLE IF EXISTS {output}")

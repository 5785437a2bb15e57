"""Incremental window recompute on real Spark and Iceberg: after any sequence of appends and
incremental runs the output equals a full recompute (and the edge), row for row; a driver killed
around the output commit leaves a table that the rerun brings to the same result."""

from __future__ import annotations

import random
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lh_testkit import run_job

from lakehouse import window_loop, window_tail
from lakehouse.window_incremental import SOURCE_SNAPSHOT_PROPERTY, read_bookmark
from lakehouse.window_state import state_bookmark, state_input_rows, state_table
from lakehouse.tables import open_table
from lakehouse.window_recompute import WindowRecomputeOptions, WindowSpec, run_window_recompute
from stream_edge.dataframe.windows.replay import replay

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


def table_rows(spark, table: str) -> list[tuple]:
    spark.sql(f"REFRESH TABLE {table}")
    return sorted((r.key, r.window_start, r.window_end, r.value) for r in spark.table(table).collect())


RAW = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 12), st.sampled_from([0, 0, 0, 3, 15, 50]),
                         st.integers(0, 9)), min_size=4, max_size=50)


@pytest.mark.timeout(1800)  # six examples of up to four window jobs each, on 2 cores shared with the suite
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(raw=RAW, batches=st.lists(st.integers(0, 2), min_size=50, max_size=50), kind=st.sampled_from(list(SPECS)),
       in_order=st.booleans(), loops=st.lists(st.sampled_from(["auto", "off"]), min_size=3, max_size=3),
       driver=st.lists(st.booleans(), min_size=3, max_size=3))
def test_incremental_runs_equal_a_full_recompute(spark, raw, batches, kind, in_order, loops, driver):
    """Records arrive in up to three appends; with ``in_order`` each append holds later offsets
    (the sink's normal order), else a batch can hold offsets older than an earlier one's (a file
    registered late). An incremental run follows each append; the output then equals a full
    recompute and what the edge emits. Each run takes the JVM loop or Spark's operators
    (``loops``), so a state written by one path is read by the other; on the loop, an increment
    writes its windows and state from the driver or, as a large one would, through Spark
    (``driver``)."""
    rows = stream(raw)
    assignment = sorted(batches[:len(rows)]) if in_order else batches[:len(rows)]
    spec = SPECS[kind]
    namespace = f"embedded.inc_{uuid.uuid4().hex[:8]}"
    source, output, full = f"{namespace}.src", f"{namespace}.out", f"{namespace}.full"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    options = WindowRecomputeOptions(table=source, output=output, value_column="temp", window=spec)
    limit = window_tail.DRIVER_WRITE_MAX_ROWS
    try:
        paths = []
        for number in range(3):
            part = [r for r, b in zip(rows, assignment) if b == number]
            if not part:
                continue
            df = spark.createDataFrame(part, SCHEMA)
            if spark.catalog.tableExists(source):
                df.writeTo(source).append()
            else:
                df.writeTo(source).using("iceberg").create()
            options.loop = loops[number]
            window_tail.DRIVER_WRITE_MAX_ROWS = limit if driver[number] else -1
            paths.append(run_window_recompute(spark, options, progress=lambda _l: None).path)
        assert not paths[0].startswith("incremental")  # the first run has no bookmark
        assert all(p.startswith("incremental") for p in paths[1:])
        run_window_recompute(spark, WindowRecomputeOptions(table=source, output=full, value_column="temp",
                                                           window=spec, full=True), progress=lambda _l: None)
        expected = edge_windows(rows, spec)
        assert table_rows(spark, full) == expected
        assert table_rows(spark, output) == expected
    finally:
        window_tail.DRIVER_WRITE_MAX_ROWS = limit
        for table in (source, output, full):
            spark.sql(f"DROP TABLE IF EXISTS {table}")


def test_only_new_windows_are_added_and_nothing_is_read_twice(spark, monkeypatch):
    """In-order appends: the run adds the windows that closed, keeps the emitted ones, records the
    new snapshot; a run with no new snapshot changes nothing; --full recomputes, and overwrites the
    existing state table from the driver (expiring its older snapshots), which the next increment
    starts from, in one task."""
    rng = random.Random(5)
    rows = stream([(rng.randrange(4), rng.randrange(12), rng.choice([0, 0, 3, 15]), rng.randrange(10))
                   for _ in range(450)])
    spec = SPECS["tumbling"]
    namespace = f"embedded.inc_{uuid.uuid4().hex[:8]}"
    source, output = f"{namespace}.src", f"{namespace}.out"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    options = WindowRecomputeOptions(table=source, output=output, value_column="temp", window=spec)
    spark.createDataFrame(rows[:300], SCHEMA).writeTo(source).using("iceberg").create()
    said: list[str] = []
    first = run_window_recompute(spark, options, progress=said.append)
    assert "windows: the window state gathered by the loop" in said  # no scan of its own
    # a new state table, created through Spark, records the state's open records too: an increment
    # reads them and one row per group at most
    state_rows = f"SELECT sum(size(records)) + count(*) FROM {state_table(output)}"
    assert state_input_rows(spark, options) == spark.sql(state_rows).first()[0] > 0
    before = table_rows(spark, output)
    spark.createDataFrame(rows[300:350], SCHEMA).writeTo(source).append()
    said.clear()
    second = run_window_recompute(spark, options, progress=said.append)
    after = table_rows(spark, output)
    assert (first.rows_read, second.rows_read) == (300, 50)
    # the windows and the state from one loop, in one task (a few new rows and open records)
    assert second.path == "incremental, native (JVM loop, one task)"
    assert set(before) <= set(after) and second.windows == len(after) - len(before) > 0
    assert after == edge_windows(rows[:350], spec)
    # the old records' per-group state came from the state table, not from a scan of the old snapshot
    assert not [line for line in said if "rebuilding" in line]
    snapshot = open_table(spark, source).java_table().currentSnapshot().snapshotId()
    assert read_bookmark(open_table(spark, output))[0] == snapshot
    state = open_table(spark, state_table(output))
    assert state_bookmark(state)[0] == str(snapshot)
    # the state's rows were overwritten in place (one plain commit), not the table replaced
    assert str(state.java_table().currentSnapshot().operation()) == "overwrite"
    # a state that does not match the output's bookmark is not trusted: rebuilt, same result
    spark.sql(f"DROP TABLE {state_table(output)}")
    spark.createDataFrame(rows[350:400], SCHEMA).writeTo(source).append()
    said.clear()
    assert run_window_recompute(spark, options, progress=said.append).rows_read == 50
    assert [line for line in said if "rebuilding" in line]
    after = table_rows(spark, output)
    assert after == edge_windows(rows[:400], spec)
    snapshot = open_table(spark, source).java_table().currentSnapshot().snapshotId()
    idle = run_window_recompute(spark, options, progress=lambda _l: None)
    assert (idle.rows_read, idle.windows, idle.path) == (0, 0, "incremental (no new source snapshot)")
    options.full = True
    said.clear()
    snapshots = f"SELECT count(*) FROM {state_table(output)}.snapshots"
    assert spark.sql(snapshots).first()[0] == 1  # the rebuilt state's table, created anew
    monkeypatch.setattr(window_loop, "STATE_SNAPSHOTS_KEPT", 1)
    assert run_window_recompute(spark, options, progress=said.append).rows_read == 400
    assert table_rows(spark, output) == after
    assert "windows: the window state gathered by the loop (written from the driver)" in said
    assert spark.sql(snapshots).first()[0] == 2  # not past twice the snapshots kept
    options.full = False
    spark.createDataFrame(rows[400:], SCHEMA).writeTo(source).append()
    said.clear()
    # the driver's write recorded the state's open records: few, so the increment is one task
    assert state_input_rows(spark, options) == spark.sql(state_rows).first()[0] > 0
    last = run_window_recompute(spark, options, progress=said.append)
    assert (last.rows_read, last.path) == (50, "incremental, native (JVM loop, one task)")
    assert not [line for line in said if "rebuilding" in line]  # the full run's state is trusted
    assert table_rows(spark, output) == edge_windows(rows, spec)
    # the driver's state write expired the state's older snapshots and the files only they held
    assert spark.sql(snapshots).first()[0] == 1
    assert spark.sql(f"SELECT count(*) FROM {state_table(output)}.all_data_files").first()[0] == 1
    for table in (source, output, state_table(output)):
        spark.sql(f"DROP TABLE IF EXISTS {table}")


@pytest.mark.parametrize("point", ["windows.before-commit", "windows.after-commit"])
def test_driver_killed_around_the_output_commit_then_rerun(spark, make_target, point):
    """The windows job's driver (Python and JVM) is SIGKILLed just before or just after the MERGE
    that commits the new windows with their bookmark; the rerun gives the full recompute's table."""
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
    bookmark = read_bookmark(open_table(spark, output))
    current = open_table(spark, source).java_table().currentSnapshot().snapshotId()
    assert (bookmark[0] == current) == (point == "windows.after-commit")
    code, out, err = run_job(args, target.env)
    assert code == 0, err[-3000:]
    assert ("no new source snapshot" in out) == (point == "windows.after-commit")
    assert table_rows(spark, output) == edge_windows(rows, spec)
    assert open_table(spark, output).java_table().currentSnapshot().summary().get(SOURCE_SNAPSHOT_PROPERTY) \
        == str(current)
    spark.sql(f"DROP TABLE IF EXISTS {output}")

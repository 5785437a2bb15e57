"""Parity of the window implementations on random streams: the native recompute (the JVM loop,
``lakehouse.window_loop``, and Spark's operators, ``lakehouse.window_native``, when the loop is
off), the Python-engine recompute (the edge's engines in applyInPandas) and the edge's engines fed
each Kafka partition in offset order (``replay``, what ``final()`` emits).

Streams have several keys over two partitions (one key on both), duplicates, out-of-order and late records;
every window kind, aggregation and closing strategy is drawn. Integer results must be equal;
floating sums and means may differ in the last bits because Spark adds the same numbers in another
order, so they are compared with a relative tolerance of 1e-9 (absolute 1e-9 near zero).

One shared local Spark session (the ``spark`` fixture) and few examples keep this affordable on a
2-core machine.
"""

from __future__ import annotations

import math
import random
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehouse import window_loop
from lakehouse.window_recompute import WindowSpec, compute_windows
from stream_edge.dataframe.windows.replay import replay

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "c", "d", "e"]
ORDER = ["__order_0", "__order_1"]  # partition, offset
RAW = st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 15), st.sampled_from([0, 0, 0, 1, 4, 12, 40]),
                         st.integers(-20, 20)), min_size=1, max_size=60)


def build_rows(raw: list, origin: int, floats: bool, spread: bool = True) -> list[tuple]:
    """(key, ts, value, partition, offset): event time advances, some records are ``back`` ms older.
    With ``spread``, key ``a`` is written to both partitions (partition expansion, a custom
    partitioner): the edge keeps its windows per partition, and so must the recompute."""
    clock, offsets, rows = origin, [0, 0], []
    for key, step, back, value in raw:
        clock += step
        partition = value % 2 if spread and key == "a" else KEYS.index(key) % 2
        rows.append((key, max(1, clock - back), value / 4 if floats else value, partition, offsets[partition]))
        offsets[partition] += 1
    return rows


def without_closed_window_records(rows: list[tuple], duration: int, grace: int) -> list[tuple]:
    """Move records that would land inside an already-closed sliding window to the grace edge
    (the streams whose sliding windows the native path computes without the engines)."""
    latest: dict[tuple[str, int], int] = {}  # per key and partition, as the edge keeps it
    out = []
    for key, ts, value, partition, offset in rows:
        now = max(latest.get((key, partition), 0), ts)
        if now - duration - grace <= ts <= now - grace - 1:
            ts = now - grace
        latest[(key, partition)] = max(now, ts)
        out.append((key, ts, value, partition, offset))
    return out


def edge_rows(rows: list[tuple], spec: WindowSpec) -> list[tuple]:
    """What the edge's ``final()`` emits: each partition in offset order through its engines."""
    result = []
    for partition in (0, 1):
        ordered = sorted((r for r in rows if r[3] == partition), key=lambda r: r[4])
        result += [(w["key"], w["start"], w["end"], w["value"]) for w in replay(
            [(r[0], r[1], r[2]) for r in ordered], kind=spec.kind, duration_ms=spec.duration_ms,
            grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation,
            closing_strategy=spec.closing)]
    return sorted(result)


def spark_rows(spark, rows: list[tuple], spec: WindowSpec, path: str, floats: bool,
               loop: str = "auto", shared_hash: bool = False) -> tuple[list[tuple], str]:
    """The rows of ``path``; the native path must run the JVM loop unless ``loop`` is off.
    ``shared_hash``: every group gets the same group hash (``__gh``), as colliding hashes would."""
    shuffled = rows[:]
    random.Random(len(rows)).shuffle(shuffled)  # row order must not matter, only offsets
    value_type = "double" if floats else "bigint"
    data = spark.createDataFrame(shuffled, f"key string, ts bigint, value {value_type}, __order_0 int, "
                                           "__order_1 bigint")
    if shared_hash:
        data = data.selectExpr("*", "CAST(0 AS BIGINT) AS __gh")
    group = ["__order_0"] if spec.closing == "partition" else ["__order_0", "key"]
    out_type = {"count": "bigint", "mean": "double"}.get(spec.aggregation, value_type)
    from pyspark.sql import types as T

    windows, described = compute_windows(data, spec, ORDER, group, T._parse_datatype_string(out_type), path, loop)
    if path == "native":
        assert described.loop == (loop != "off"), f"the JVM loop did not run: {described.operators_reason}"
    return sorted((r.key, r.window_start, r.window_end, r.value) for r in windows.collect()), str(described)


def same(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[:3] != y[:3]:
            return False
        if isinstance(x[3], float) or isinstance(y[3], float):
            if not math.isclose(x[3], y[3], rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif x[3] != y[3]:
            return False
    return True


def check(spark, rows: list[tuple], spec: WindowSpec, floats: bool, engines: bool = True, loop: str = "auto",
          shared_hash: bool = False) -> str:
    expected = edge_rows(rows, spec)
    native, described = spark_rows(spark, rows, spec, "native", floats, loop, shared_hash)
    if engines:
        by_engines, _ = spark_rows(spark, rows, spec, "python-engine", floats)
        assert same(by_engines, expected), (f"python-engine path differs for {spec.describe()}:\n{by_engines}\n"
                                            f"{expected}")
    assert same(native, expected), f"native path differs for {spec.describe()}:\n{native}\n{expected}"
    return described


AGGS = st.sampled_from(["sum", "count", "mean", "min", "max"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), step_fraction=st.floats(0.05, 0.95), hop=st.booleans(),
       grace=st.integers(0, 20), aggregation=AGGS, closing=st.sampled_from(["key", "partition"]),
       origin=st.sampled_from([0, 5, 1000]), floats=st.booleans())
def test_tumbling_and_hopping_paths_equal_the_edge(spark, raw, duration, step_fraction, hop, grace, aggregation,
                                                   closing, origin, floats):
    step = min(duration - 1, max(1, int(duration * step_fraction))) if hop else None
    spec = WindowSpec("hopping" if hop else "tumbling", duration, grace, step, aggregation, closing)
    described = check(spark, build_rows(raw, origin, floats), spec, floats)
    assert described == "native"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(1, 30), grace=st.integers(0, 20), aggregation=AGGS,
       origin=st.sampled_from([0, 5, 1000]), tidy=st.booleans(), floats=st.booleans())
def test_sliding_paths_equal_the_edge(spark, raw, duration, grace, aggregation, origin, tidy, floats):
    spec = WindowSpec("sliding", duration, grace, None, aggregation)
    rows = build_rows(raw, origin, floats)
    if tidy:
        rows = without_closed_window_records(rows, duration, grace)
    described = check(spark, rows, spec, floats)
    if tidy and origin == 1000:
        assert described == "native"  # no key needed the engines
    else:
        assert described.startswith("native")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), kind=st.sampled_from(["tumbling", "hopping", "sliding"]),
       grace=st.integers(0, 20), aggregation=AGGS, closing=st.sampled_from(["key", "partition"]),
       origin=st.sampled_from([0, 1000]), shared_hash=st.booleans(), floats=st.booleans(),
       bound=st.sampled_from([("TASK_ROWS_HELD", 2), ("TASK_ROWS_HELD", 7), ("TASK_BYTES_HELD", 150),
                              ("TASK_BYTES_HELD", 9000)]))
def test_tasks_past_the_rows_held_go_through_sparks_sorter(spark, raw, duration, kind, grace, aggregation, closing,
                                                           origin, shared_hash, floats, bound):
    # the loop groups a task's rows in per-hash buckets and puts each in offset order itself while
    # it holds at most TASK_ROWS_HELD rows and TASK_BYTES_HELD bytes; past either, the rows held and
    # the rest take Spark's external sorter: the same windows (a bucket's first chunk is 4 KiB: 150
    # bytes hold none, 9000 bytes two buckets; 2 or 7 rows move a few held rows to the sorter)
    step = max(1, duration // 3) if kind == "hopping" else None
    spec = WindowSpec(kind, duration, grace, step, aggregation, "key" if kind == "sliding" else closing)
    name, value = bound
    with mock.patch.object(window_loop, name, value):
        check(spark, build_rows(raw, origin, floats), spec, floats, engines=False, shared_hash=shared_hash)


def test_sliding_keys_with_records_inside_closed_windows_go_through_the_engines(spark):
    # key a: in order, far from 0 -> closed form; key b: ts 1025 arrives after 1030 with a 10 ms
    # window and no grace: accepted (> 1019), but its own window [1015, 1025] was already closed.
    rows = [("a", 1000, 1, 0, 0), ("a", 1005, 2, 0, 1), ("a", 1040, 3, 0, 2),
            ("b", 1000, 1, 1, 0), ("b", 1030, 2, 1, 1), ("b", 1025, 5, 1, 2), ("b", 1060, 1, 1, 3)]
    spec = WindowSpec("sliding", 10, 0, None, "sum")
    described = check(spark, rows, spec, floats=False)
    assert described.startswith("native (1 of 2 keys through the edge's engines")


def test_custom_aggregation_takes_the_engine_path(spark):
    from stream_edge.dataframe.windows.aggregations import Reduce

    rows = [("a", 1000, 3, 0, 0), ("a", 1500, 4, 0, 1), ("a", 2100, 5, 0, 2), ("a", 3100, 1, 0, 3)]
    spec = WindowSpec("tumbling", 1000, aggregation=Reduce(lambda agg, v: agg * 10 + v, lambda v: v))
    from lakehouse.window_recompute import choose_path

    assert choose_path(spec) == "python-engine"
    with pytest.raises(ValueError, match="native path cannot compute custom aggregation Reduce"):
        choose_path(spec, "native")
    got, described = spark_rows(spark, rows, spec, "python-engine", floats=False)
    assert described == "python-engine (custom aggregation Reduce)"
    assert got == edge_rows(rows, spec) == [("a", 1000, 2000, 34), ("a", 2000, 3000, 5)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), kind=st.sampled_from(["tumbling", "hopping", "sliding"]),
       grace=st.integers(0, 20), aggregation=AGGS, closing=st.sampled_from(["key", "partition"]),
       origin=st.sampled_from([0, 1000]), floats=st.booleans())
def test_spark_operators_equal_the_edge_with_the_loop_off(spark, raw, duration, kind, grace, aggregation, closing,
                                                          origin, floats):
    # where the loop's jar is missing (or --jvm-loop off) Spark's operators compute the native rows
    step = max(1, duration // 3) if kind == "hopping" else None
    spec = WindowSpec(kind, duration, grace, step, aggregation, "key" if kind == "sliding" else closing)
    check(spark, build_rows(raw, origin, floats), spec, floats, engines=False, loop="off")


def test_hopping_windows_wider_than_the_loops_first_ring(spark):
    # (grace + duration) / step above 4096 open windows per key: the loop's ring grows while a key
    # still has windows open, and a late record lands in an open window far behind the newest
    rows = [("a", 100, 1, 0, 0), ("a", 9000, 2, 0, 1), ("a", 4100, 3, 0, 2), ("a", 20000, 4, 0, 3),
            ("b", 10, 5, 1, 0), ("b", 12010, 6, 1, 1), ("b", 30000, 7, 1, 2)]
    for aggregation in ("sum", "max"):
        spec = WindowSpec("hopping", 5000, 3000, 1, aggregation)
        assert check(spark, rows, spec, floats=False, engines=False) == "native"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), kind=st.sampled_from(["tumbling", "hopping", "sliding"]),
       grace=st.integers(0, 20), aggregation=AGGS, closing=st.sampled_from(["key", "partition"]),
       origin=st.sampled_from([0, 1000]), floats=st.booleans())
def test_groups_sharing_a_hash_keep_their_own_windows_in_the_loop(spark, raw, duration, kind, grace, aggregation,
                                                                  closing, origin, floats):
    # the loop reads each group hash's rows in offset order: groups whose hashes collide come
    # interleaved in offset order, and each keeps its own event time and windows
    step = max(1, duration // 3) if kind == "hopping" else None
    spec = WindowSpec(kind, duration, grace, step, aggregation, "key" if kind == "sliding" else closing)
    check(spark, build_rows(raw, origin, floats), spec, floats, engines=False, shared_hash=True)

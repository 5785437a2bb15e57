"""Parity of the window engines on random streams: the native plan (Spark's operators,
``lakehouse.windows.native``), the python-engine plan (the edge's engines in applyInArrow) and the
edge's engines fed each Kafka partition in offset order (``replay``, what ``final()`` emits).

Streams have several keys over two partitions (one key on both), duplicates, out-of-order and late
records, and with floating values NaN (the edge's ``<``-based min/max keep a window's first NaN
and ignore a later one; the native plan follows it); every window kind, aggregation and closing
strategy is drawn. Integer results must be equal; floating sums and means may differ in the last
bits because Spark adds the same numbers in another order, so they are compared with a relative
tolerance of 1e-9 (absolute 1e-9 near zero); NaN equals NaN.

One shared local Spark session (the ``spark`` fixture) and few examples keep this affordable on a
2-core machine.
"""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lakehouse.windows.definition import WindowSpec
from lakehouse.windows.plan import Grouping, choose_engine, compute_windows, fallback_windows, proven_windows
from lakehouse.windows.proven import provable
from stream_edge.dataframe.windows.replay import replay

pytestmark = pytest.mark.spark

KEYS = ["a", "b", "c", "d", "e"]
ORDER = ["__order_0", "__order_1"]  # partition, offset
RAW = st.lists(st.tuples(st.sampled_from(KEYS), st.integers(0, 15), st.sampled_from([0, 0, 0, 1, 4, 12, 40]),
                         st.integers(-20, 20)), min_size=1, max_size=60)


def build_rows(raw: list, origin: int, floats: bool, spread: bool = True, nans: bool = False) -> list[tuple]:
    """(key, ts, value, partition, offset): event time advances, some records are ``back`` ms older.
    With ``spread``, key ``a`` is written to both partitions (partition expansion, a custom
    partitioner): the edge keeps its windows per partition, and so must the recompute. With
    ``nans`` (floats), the values drawn as 7 or -3 are NaN."""
    clock, offsets, rows = origin, [0, 0], []
    for key, step, back, value in raw:
        clock += step
        partition = value % 2 if spread and key == "a" else KEYS.index(key) % 2
        number = (math.nan if nans and value in (7, -3) else value / 4) if floats else value
        rows.append((key, max(1, clock - back), number, partition, offsets[partition]))
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
    return sorted(result, key=order)


def order(row: tuple) -> tuple:
    """A sort key that places NaN values (which compare unequal to themselves) deterministically."""
    value = row[3]
    return (*row[:3], (1, 0.0) if isinstance(value, float) and math.isnan(value) else (0, value))


def spark_rows(spark, rows: list[tuple], spec: WindowSpec, engine: str, floats: bool) -> tuple[list[tuple], str]:
    """The rows of ``engine`` and the plan's detail (read after the rows were computed)."""
    from pyspark.sql import types as T

    shuffled = rows[:]
    random.Random(len(rows)).shuffle(shuffled)  # row order must not matter, only offsets
    value_type = "double" if floats else "bigint"
    data = spark.createDataFrame(shuffled, f"key string, ts bigint, value {value_type}, __order_0 int, "
                                           "__order_1 bigint")
    group = ["__order_0"] if spec.closing == "partition" else ["__order_0", "key"]
    out_type = {"count": "bigint", "mean": "double"}.get(spec.aggregation, value_type)
    windows, note = compute_windows(data, Grouping(spec, ORDER, group), T._parse_datatype_string(out_type), engine,
                                    plain=data)
    got = sorted(((r.key, r.window_start, r.window_end, r.value) for r in windows.collect()), key=order)
    return got, note.engine + (f" ({note.detail()})" if note.detail() else "")


def proven_rows(spark, rows: list[tuple], spec: WindowSpec, floats: bool) -> tuple[list[tuple], int | None]:
    """What the ``proven-then-patch`` strategy writes (where a proven plan exists): the proven
    plan's rows of the groups it proves, and the others' by the exact plan; and how many keys
    fell back (None: no proven plan, the exact plan's rows)."""
    from pyspark.sql import types as T

    value_type = "double" if floats else "bigint"
    data = spark.createDataFrame(rows, f"key string, ts bigint, value {value_type}, __order_0 int, __order_1 bigint")
    group = ["__order_0"] if spec.closing == "partition" else ["__order_0", "key"]
    out_type = {"count": "bigint", "mean": "double"}.get(spec.aggregation, value_type)
    grouping, value_type = Grouping(spec, ORDER, group), T._parse_datatype_string(out_type)
    if not provable(grouping):
        return spark_rows(spark, rows, spec, "native", floats)[0], None
    first, note = proven_windows(data, grouping, value_type)
    got = [(r.key, r.window_start, r.window_end, r.value) for r in first.collect()]
    groups = note.unproven_groups(spark, data, group)
    if groups is None:
        return sorted(got, key=order), 0
    patch, _ = fallback_windows(data, grouping, value_type, groups)
    got += [(r.key, r.window_start, r.window_end, r.value) for r in patch.collect()]
    return sorted(got, key=order), groups.select("key").distinct().count()


def same(a: list[tuple], b: list[tuple]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x[:3] != y[:3]:
            return False
        if isinstance(x[3], float) or isinstance(y[3], float):
            if math.isnan(x[3]) or math.isnan(y[3]):
                if not (math.isnan(x[3]) and math.isnan(y[3])):
                    return False
            elif not math.isclose(x[3], y[3], rel_tol=1e-9, abs_tol=1e-9):
                return False
        elif x[3] != y[3]:
            return False
    return True


def check(spark, rows: list[tuple], spec: WindowSpec, floats: bool, engines: bool = True) -> str:
    expected = edge_rows(rows, spec)
    native, described = spark_rows(spark, rows, spec, "native", floats)
    if engines:
        by_engines, _ = spark_rows(spark, rows, spec, "python-engine", floats)
        assert same(by_engines, expected), (f"python-engine differs for {spec.describe()}:\n{by_engines}\n"
                                            f"{expected}")
    assert same(native, expected), f"native differs for {spec.describe()}:\n{native}\n{expected}"
    patched, keys = proven_rows(spark, rows, spec, floats)
    assert same(patched, expected), (f"proven-then-patch ({keys} keys patched) differs for "
                                     f"{spec.describe()}:\n{patched}\n{expected}")
    return described


AGGS = st.sampled_from(["sum", "count", "mean", "min", "max"])


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(2, 30), step_fraction=st.floats(0.05, 0.95), hop=st.booleans(),
       grace=st.integers(0, 20), aggregation=AGGS, closing=st.sampled_from(["key", "partition"]),
       origin=st.sampled_from([0, 5, 1000]), floats=st.booleans(), nans=st.booleans())
def test_tumbling_and_hopping_engines_equal_the_edge(spark, raw, duration, step_fraction, hop, grace, aggregation,
                                                     closing, origin, floats, nans):
    step = min(duration - 1, max(1, int(duration * step_fraction))) if hop else None
    spec = WindowSpec("hopping" if hop else "tumbling", duration, grace, step, aggregation, closing)
    described = check(spark, build_rows(raw, origin, floats, nans=nans), spec, floats)
    assert described == "native"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, duration=st.integers(1, 30), grace=st.integers(0, 20), aggregation=AGGS,
       origin=st.sampled_from([0, 5, 1000]), tidy=st.booleans(), floats=st.booleans(), nans=st.booleans())
def test_sliding_engines_equal_the_edge(spark, raw, duration, grace, aggregation, origin, tidy, floats, nans):
    spec = WindowSpec("sliding", duration, grace, None, aggregation)
    rows = build_rows(raw, origin, floats, nans=nans)
    if tidy:
        rows = without_closed_window_records(rows, duration, grace)
    described = check(spark, rows, spec, floats)
    if tidy and origin == 1000 and not (nans and floats and aggregation in ("min", "max")):
        assert described == "native"  # no key needed the engines
    else:
        assert described.startswith("native")


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
    assert choose_engine(spec) == "python-engine"
    with pytest.raises(ValueError, match="native engine cannot compute custom aggregation Reduce"):
        choose_engine(spec, "native")
    got, described = spark_rows(spark, rows, spec, "python-engine", floats=False)
    assert described == "python-engine (custom aggregation Reduce)"
    assert got == edge_rows(rows, spec) == [("a", 1000, 2000, 34), ("a", 2000, 3000, 5)]


def test_nan_follows_the_edge_in_min_and_max(spark):
    # per window: a first NaN is kept (the edge's `new < kept` never replaces it), a later NaN is
    # ignored; Spark's own min/max would order NaN above every number
    nan = math.nan
    rows = [("a", 1000, nan, 0, 0), ("a", 1100, 2.0, 0, 1), ("a", 2100, 5.0, 0, 2), ("a", 2200, nan, 0, 3),
            ("a", 2300, 1.0, 0, 4), ("b", 1000, 3.0, 1, 0), ("b", 1500, nan, 1, 1), ("a", 9000, 0.0, 0, 5),
            ("b", 9000, 0.0, 1, 2)]
    for kind, step in (("tumbling", None), ("hopping", 500), ("sliding", None)):
        for aggregation in ("min", "max"):
            spec = WindowSpec(kind, 1000, 0, step, aggregation)
            described = check(spark, rows, spec, floats=True)
            assert described.startswith("native")
    tumbling_min = edge_rows(rows, WindowSpec("tumbling", 1000, 0, None, "min"))
    assert [r[3] for r in tumbling_min if r[0] == "a"][:2] == [pytest.approx(nan, nan_ok=True), 1.0]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=RAW, kind=st.sampled_from(["tumbling", "hopping", "sliding"]), aggregation=st.sampled_from(["min", "max"]),
       closing=st.sampled_from(["key", "partition"]), origin=st.sampled_from([0, 1000]))
def test_nan_min_and_max_equal_the_edge(spark, raw, kind, aggregation, closing, origin):
    spec = WindowSpec(kind, 12, 3, 4 if kind == "hopping" else None, aggregation,
                      "key" if kind == "sliding" else closing)
    check(spark, build_rows(raw, origin, floats=True, nans=True), spec, floats=True)


@pytest.mark.parametrize("kind", ["tumbling", "hopping", "sliding"])
def test_proven_plans_recompute_the_keys_with_records_later_than_grace(spark, kind):
    # key a: in order (proven); key b: 1040 arrives after 1100, 60 ms late with a 5 ms grace:
    # dropped from its fixed window, and for sliding windows inside an already-closed one
    rows = [("a", 1000, 1, 0, 0), ("a", 1030, 2, 0, 1), ("a", 1100, 3, 0, 2), ("a", 1300, 4, 0, 3),
            ("b", 1000, 1, 1, 0), ("b", 1100, 2, 1, 1), ("b", 1040, 5, 1, 2), ("b", 1300, 1, 1, 3)]
    spec = WindowSpec(kind, 50, 5, 25 if kind == "hopping" else None, "sum")
    got, keys = proven_rows(spark, rows, spec, floats=False)
    assert keys == 1 and same(got, edge_rows(rows, spec))
    on_time = [r for r in rows if r[0] == "a"]
    got, keys = proven_rows(spark, on_time, spec, floats=False)
    assert keys == 0 and same(got, edge_rows(on_time, spec))

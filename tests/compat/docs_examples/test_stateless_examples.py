"""Documented Quix Streams 3.x examples, stateless part: each example of the API reference and the
"Processing & transforming data" guide (StreamingDataFrame.apply / update / filter / fill / drop /
contains / column selection and assignment / set_timestamp / set_headers / print, the
StreamingSeries operators) written as a small pipeline with the unit test the docs recommend
(``sdf.test(...)``, ``StreamingSeries.test(...)``), run on quixstreams 3.28.1 and on stream_edge
(real broker: Quix's ``app.topic()`` contacts it). One shared run per package; one test id per
example (``EXAMPLES``)."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-docs-stateless")]  # one worker: one shared run

PROGRAM = r'''
import uuid

from quixstreams import Application, MessageContext, message_context
from quixstreams.dataframe.series import StreamingSeries

app = Application(broker_address=BROKER, consumer_group="docs-" + uuid.uuid4().hex[:6], loglevel=None)
suffix = uuid.uuid4().hex[:6]
made = []


def fresh():
    made.append(1)
    return app.dataframe(app.topic(f"docs-stateless-{suffix}-{len(made)}", value_deserializer="json"))


def run(name, build, *records):
    print("==", name)
    sdf = build(fresh())
    for record in records:
        value, kw = (record if isinstance(record, tuple) else (record, {}))
        try:
            print(repr(sdf.test(value, **{"key": b"k", "timestamp": 100, **kw})))
        except Exception as exc:
            print(type(exc).__name__, exc)


def series(name, make, *values):
    print("==", name)
    for value in values:
        try:
            print(repr(make().test(value, key=b"k", timestamp=100)))
        except Exception as exc:
            print(type(exc).__name__, exc)


def col(name):
    return StreamingSeries(name=name, sdf_id=1)


run("apply: keep the text columns", lambda sdf: sdf.apply(lambda d: {k: v for k, v in d.items() if isinstance(v, str)}),
    {"name": "ann", "age": 30, "city": "oslo"})
run("apply: upper-case text columns", lambda sdf: sdf.apply(
    lambda d: {k: v.upper() if isinstance(v, str) else v for k, v in d.items()}), {"a": "x", "b": 2})
run("apply: expand a list into records", lambda sdf: sdf.apply(lambda v: v["items"], expand=True),
    {"items": [1, 2, 3]}, {"items": []})
run("apply: with metadata", lambda sdf: sdf.apply(lambda v, k, t, h: {"key": k.decode(), "ts": t, "n": v["n"]},
                                                  metadata=True), {"n": 1})
run("update: append to a list", lambda sdf: sdf.update(lambda v: v.append("new_item")), ["a"])
run("update: in place without reassigning", lambda sdf: (sdf.update(lambda v: v.append(1)), sdf)[1], [0])
run("filter: keep large values", lambda sdf: sdf.filter(lambda v: v["temperature"] > 50),
    {"temperature": 70}, {"temperature": 10})
run("filter: with metadata", lambda sdf: sdf.filter(lambda v, k, t, h: k == b"k" and t > 50, metadata=True),
    {"x": 1}, ({"x": 2}, {"key": b"other"}))
run("fill: missing column gets None", lambda sdf: (sdf.fill("y"), sdf)[1], {"x": 1})
run("fill: defaults per column", lambda sdf: (sdf.fill("a", b=0, c="n/a"), sdf)[1], {"b": 5}, {})
run("drop: remove columns", lambda sdf: (sdf.drop(["x", "y"]), sdf)[1], {"x": 1, "y": 2, "z": 3})
run("drop: missing column raises", lambda sdf: (sdf.drop("x"), sdf)[1], {"z": 3})
run("drop: errors=ignore", lambda sdf: (sdf.drop(["x", "q"], errors="ignore"), sdf)[1], {"x": 1, "z": 3})


def has_columns(sdf):
    sdf["has_column_A"] = sdf.contains("column_a")
    sdf["has_column_X_Y"] = sdf.contains(["column_x", "column_y"])
    return sdf


run("contains: column presence", has_columns, {"column_a": 1, "column_x": 2}, {"column_x": 1, "column_y": 2})
run("select columns", lambda sdf: sdf[["a", "b"]], {"a": 1, "b": 2, "c": 3})


def assign_sum(sdf):
    sdf["new_sum_field"] = sdf["column_c"] + sdf["column_d"] + 2
    return sdf


run("assign: column arithmetic", assign_sum, {"column_c": 1, "column_d": 4})


def assign_const(sdf):
    sdf["source"] = "sensor"
    return sdf


run("assign: a constant", assign_const, {"v": 1})
run("filter with a series", lambda sdf: sdf[(sdf["column_a"] > 10) & (sdf["new_field"] >= 10)],
    {"column_a": 11, "new_field": 10}, {"column_a": 11, "new_field": 9})


def nested(sdf):
    sdf["city"] = sdf["address"]["city"]
    return sdf


run("assign: nested column", nested, {"address": {"city": "Bergen"}})


def str_to_int(sdf):
    sdf["new_col_2"] = sdf["str_col"].apply(lambda v: int(v)) + sdf["int_col"] + 2
    return sdf


run("series apply: parse then add", str_to_int, {"str_col": "5", "int_col": 1})


def flags(sdf):
    sdf["has_my_str"] = sdf["str_column"].isin(sdf["column_with_list_of_strs"])
    sdf["has_my_substr"] = sdf["column_a"].contains("my_substring")
    sdf["is_same"] = sdf["column_a"].is_(sdf["column_b"])
    sdf["is_not_same"] = sdf["column_a"].isnot(sdf["column_b"])
    sdf["is_null"] = sdf["column_c"].isnull()
    sdf["is_not_null"] = sdf["column_c"].notnull()
    sdf["abs_col_sum"] = sdf["int_col"].abs() + sdf["other_int_col"]
    return sdf


run("series: membership, identity, nulls, abs", flags,
    {"str_column": "b", "column_with_list_of_strs": ["a", "b"], "column_a": "xmy_substringx", "column_b": None,
     "column_c": None, "int_col": -3, "other_int_col": 1})
run("series: logical and / or", lambda sdf: sdf[(sdf["a"] > 1) | ~(sdf["b"] == 2)], {"a": 0, "b": 2}, {"a": 0, "b": 3})
run("set_timestamp: from the value", lambda sdf: sdf.set_timestamp(lambda value, key, timestamp, headers:
                                                                   value["new_timestamp"]),
    {"new_timestamp": 12345})
run("set_headers: from the value", lambda sdf: sdf.set_headers(lambda value, key, timestamp, headers:
                                                               [("id", value["id"].encode())]), {"id": "a1"})
run("print: value and metadata", lambda sdf: sdf.print(metadata=True), ({"x": 1}, {"headers": [("h", b"1")]}))
run("print: value only", lambda sdf: sdf.print(), {"x": 1})
run("print: a long value wraps", lambda sdf: sdf.print(metadata=True),
    {"sensor": "temperature-probe-0001", "readings": list(range(20)), "site": {"name": "north", "floor": 3}})
run("print: not pretty", lambda sdf: sdf.print(pretty=False), {"x": [1, 2]})


def partition_flag(sdf):
    return sdf.apply(lambda value: {**value, "p2": message_context().partition == 2})


run("message_context in a test", partition_flag,
    ({"x": 1}, {"ctx": MessageContext(topic="t", partition=2, offset=0, size=0)}))
run("expand then filter", lambda sdf: sdf.apply(lambda v: v["readings"], expand=True).filter(lambda r: r > 0),
    {"readings": [3, -1, 4]})
series("Series.test: arithmetic", lambda: col("a") * 2 + col("b"), {"a": 2, "b": 1})
series("Series.test: comparison chain", lambda: (col("a") > 1) & (col("b") < 5), {"a": 2, "b": 9}, {"a": 2, "b": 1})
series("Series.test: missing column", lambda: col("zzz") + 1, {"a": 1})
'''

EXAMPLES = [
    "apply: keep the text columns", "apply: upper-case text columns", "apply: expand a list into records",
    "apply: with metadata", "update: append to a list", "update: in place without reassigning",
    "filter: keep large values", "filter: with metadata", "fill: missing column gets None",
    "fill: defaults per column", "drop: remove columns", "drop: missing column raises", "drop: errors=ignore",
    "contains: column presence", "select columns", "assign: column arithmetic", "assign: a constant",
    "filter with a series", "assign: nested column", "series apply: parse then add",
    "series: membership, identity, nulls, abs", "series: logical and / or", "set_timestamp: from the value",
    "set_headers: from the value", "print: value and metadata", "print: value only", "print: a long value wraps",
    "print: not pretty", "message_context in a test",
    "expand then filter", "Series.test: arithmetic", "Series.test: comparison chain", "Series.test: missing column",
]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM)


@pytest.mark.parametrize("example", EXAMPLES)
def test_documented_example_matches_quixstreams(outputs, example):
    shown = compare_section(outputs, example)
    assert shown.strip()

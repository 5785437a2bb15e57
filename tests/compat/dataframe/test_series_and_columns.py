"""StreamingSeries operators and column operations give Quix Streams 3.28's results (through
sdf.test() on both packages, outputs compared byte for byte; real broker for Quix's app.topic())."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import uuid
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group="g-" + uuid.uuid4().hex[:6], loglevel=None)
sdf = app.dataframe(app.topic("series-" + uuid.uuid4().hex[:6]))
VALUES = [{"a": 7, "b": 2, "s": "hello", "n": None, "l": [1, 2], "neg": -3.5},
          {"a": -4, "b": 3, "s": "", "n": 0, "l": [], "neg": 2}]

def show(label, frame):
    for value in VALUES:
        try:
            print(label, repr(frame.test(dict(value), key=b"k", timestamp=1)))
        except Exception as exc:
            print(label, type(exc).__name__, str(exc)[:80])

OPS = {"add": lambda f: f["a"] + f["b"], "sub": lambda f: f["a"] - f["b"], "mul": lambda f: f["a"] * f["b"],
       "div": lambda f: f["a"] / f["b"], "mod": lambda f: f["a"] % f["b"], "add const": lambda f: f["a"] + 10,
       "mul const": lambda f: f["b"] * 2.5, "eq": lambda f: f["a"] == 7, "ne": lambda f: f["a"] != 7,
       "lt": lambda f: f["a"] < f["b"], "le": lambda f: f["a"] <= 7, "gt": lambda f: f["a"] > f["b"],
       "ge": lambda f: f["b"] >= 3, "and": lambda f: (f["a"] > 0) & (f["b"] > 1),
       "or": lambda f: (f["a"] > 0) | (f["b"] > 2), "not": lambda f: ~(f["a"] > 0),
       "isin": lambda f: f["a"].isin([7, 8]), "contains": lambda f: f["s"].contains("ell"),
       "is_": lambda f: f["n"].is_(None), "isnot": lambda f: f["n"].isnot(None),
       "isnull": lambda f: f["n"].isnull(), "notnull": lambda f: f["n"].notnull(), "abs": lambda f: f["neg"].abs(),
       "apply": lambda f: f["a"].apply(lambda v: v * 3), "chain": lambda f: (f["a"] + f["b"]) * 2 - 1,
       "len": lambda f: f["l"].apply(len)}
for label, make in OPS.items():
    frame = sdf.apply(lambda v: dict(v))
    frame["out"] = make(frame)
    show(label, frame[["out"]])
filtered = sdf[(sdf["a"] > 0) & sdf["s"].contains("h")]
show("filter", filtered)
show("select", sdf[["a", "s"]])
show("contains col", sdf.apply(lambda v: dict(v)).filter(sdf.contains("n")))
dropped = sdf.apply(lambda v: dict(v))
dropped.drop(["l", "neg"])
show("drop", dropped)
missing = sdf.apply(lambda v: dict(v))
missing.drop("zzz", errors="ignore")
show("drop ignore", missing)
strict = sdf.apply(lambda v: dict(v))
strict.drop("zzz")
show("drop raise", strict)
filled = sdf.apply(lambda v: dict(v))
filled.fill("y", n=42)
show("fill", filled)
stamped = sdf.set_timestamp(lambda v, k, t, h: t + v["b"])
show("set_timestamp", stamped)
headed = sdf.set_headers(lambda v, k, t, h: [("b", str(v["b"]).encode())])
show("set_headers", headed)
'''


def test_series_and_column_operations_match_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM)
    for edge_line, quix_line in zip(out.edge.splitlines(), out.quix.splitlines()):
        assert edge_line == quix_line
    assert out.edge == out.quix

"""``StreamingSeries.test()`` returns ``(result, key, timestamp, headers)`` as on quixstreams 3.28.1,
for every Series operator, with 3.28.1's errors (``InvalidOperation``, ``ColumnDoesNotExist``,
``InvalidColumnReference``, a nested ``KeyError``) and messages; dataframe-level column errors
through ``sdf.test()`` (real broker: Quix's ``app.topic()`` contacts it). One shared run per
package, one test per printed section."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("compat-series-test")]  # one worker: one shared run

PROGRAM = r'''
import uuid
from quixstreams import Application, message_context
from quixstreams.core.stream.exceptions import InvalidOperation
from quixstreams.dataframe.exceptions import ColumnDoesNotExist, InvalidColumnReference
from quixstreams.dataframe.series import StreamingSeries
from quixstreams.models import MessageContext

KNOWN = (InvalidOperation, ColumnDoesNotExist, InvalidColumnReference)
V = {"a": 7, "b": 2, "s": "hello", "n": None, "l": [1, 2], "neg": -3.5, "d": {"x": {"y": 5}}, "t": True, "f": 0}


def S(name="a", sdf_id=1):
    return StreamingSeries(name=name, sdf_id=sdf_id)


def err(exc):
    kind = [k.__name__ for k in KNOWN if isinstance(exc, k)] or [type(exc).__name__]
    return f"{kind[0]}: {exc}"


def show(label, make, value=V, **kw):
    try:
        value = dict(value) if isinstance(value, dict) else value
        print(label, repr(make().test(value, key=b"k", timestamp=1, headers=[("h", b"v")], **kw)))
    except Exception as exc:
        print(label, err(exc))


print("== arithmetic")
show("col", lambda: S("a"))
show("add", lambda: S("a") + S("b"))
show("add const", lambda: S("a") + 10)
show("sub", lambda: S("a") - S("b"))
show("mul", lambda: S("a") * 3)
show("div", lambda: S("a") / S("b"))
show("div0", lambda: S("a") / 0)
show("mod", lambda: S("a") % S("b"))
show("chain", lambda: (S("a") + S("b")) * 2 - 1)
show("str + int", lambda: S("s") + 1)
print("== comparisons")
show("eq", lambda: S("a") == 7)
show("ne", lambda: S("a") != 7)
show("lt", lambda: S("a") < S("b"))
show("le", lambda: S("a") <= 7)
show("gt", lambda: S("a") > 1)
show("ge", lambda: S("b") >= 3)
show("str lt int", lambda: S("s") < 1)
print("== logical")
show("and", lambda: (S("a") > 0) & (S("b") > 1))
show("and const", lambda: S("t") & "yes")
show("and falsy", lambda: S("f") & S("a"))
show("and short-circuit", lambda: S("f") & S("zzz"))
show("or", lambda: (S("a") < 0) | S("s"))
show("or const", lambda: S("f") | 5)
show("or short-circuit", lambda: S("t") | S("zzz"))
show("not", lambda: ~S("f"))
show("not truthy", lambda: ~S("s"))
print("== membership and identity")
show("isin", lambda: S("a").isin([7, 8]))
show("isin series", lambda: S("a").isin(S("l")))
show("isin not container", lambda: S("a").isin(5))
show("contains", lambda: S("s").contains("ell"))
show("contains series", lambda: S("l").contains(S("b")))
show("contains none", lambda: S("n").contains("x"))
show("is_", lambda: S("n").is_(None))
show("isnot", lambda: S("n").isnot(None))
show("isnull", lambda: S("n").isnull())
show("notnull", lambda: S("a").notnull())
print("== abs and apply")
show("abs", lambda: S("neg").abs())
show("abs str", lambda: S("s").abs())
show("apply", lambda: S("a").apply(lambda v: v * 3))
show("apply chain", lambda: S("a").apply(str).apply(len))
show("apply then op", lambda: S("l").apply(len) + S("a"))
print("== items")
show("nested", lambda: S("d")["x"]["y"])
show("nested op", lambda: S("d")["x"]["y"] + S("a"))
show("nested missing", lambda: S("d")["x"]["zz"])
show("nested bad type", lambda: S("a")["x"])
show("list index", lambda: S("l")[1])
show("list index out of range", lambda: S("l")[5])
print("== column errors")
show("missing", lambda: S("zzz"))
show("missing in op", lambda: S("zzz") + 1)
show("missing in and", lambda: S("zzz") & True)
show("missing right", lambda: S("a") + S("zzz"))
show("list value", lambda: S("a"), value=[1, 2])
show("str value", lambda: S("a"), value="text")
show("none value", lambda: S("a"), value=None)
show("no name", lambda: StreamingSeries(sdf_id=1))
print("== invalid operations")
show("other sdf", lambda: S("a", 1) + S("b", 2))
show("other sdf and", lambda: S("a", 1) & S("b", 2))
show("other sdf or", lambda: S("a", 1) | S("b", 2))
show("other sdf isin", lambda: S("a", 1).isin(S("l", 2)))
show("other sdf contains", lambda: S("l", 1).contains(S("b", 2)))
show("bool", lambda: bool(S("a")))
show("and keyword", lambda: S("a") and S("b"))
show("if", lambda: 1 if S("a") else 0)
print("== context")
ctx = MessageContext(topic="t", partition=2, offset=9, size=0)
show("ctx", lambda: S("a").apply(lambda v: [message_context().topic, message_context().offset]), ctx=ctx)
show("no ctx", lambda: S("a").apply(lambda v: message_context().offset).apply(type))
print("sdf_id", S("a", 5).sdf_id)

print("== dataframe")
app = Application(broker_address=BROKER, consumer_group="g-" + uuid.uuid4().hex[:6], loglevel=None)
sdf = app.dataframe(app.topic("series-test-" + uuid.uuid4().hex[:6]))


def run(label, make, value=V):
    try:
        frame = make()
        value = dict(value) if isinstance(value, dict) else value
        print(label, repr(frame.test(value, key=b"k", timestamp=1)))
    except Exception as exc:
        print(label, err(exc))


def assign(make):
    def build():
        frame = sdf.apply(lambda v: v)
        frame["out"] = make(frame)
        return frame[["out"]]
    return build


run("contains list", assign(lambda f: f.contains(["a", "b"])))
run("contains list missing", assign(lambda f: f.contains(["a", "zzz"])))
run("contains str", assign(lambda f: f.contains("s")))
run("assign missing", assign(lambda f: f["zzz"] + 1))
run("assign missing right", assign(lambda f: f["a"] * f["zzz"]))
run("assign nested", assign(lambda f: f["d"]["x"]["y"] + f["a"]))
run("filter missing", lambda: sdf[sdf["zzz"] > 0])
run("filter short-circuit", lambda: sdf[(sdf["f"] > 0) & (sdf["zzz"] > 0)])
run("filter list value", lambda: sdf[sdf["a"] > 0], value=[1])
run("select missing", lambda: sdf[["a", "zzz"]])
other = sdf.apply(lambda v: v)


def cross_assign():
    frame = sdf.apply(lambda v: v)
    frame["x"] = other["a"] + 1
    return frame


run("assign from other sdf", cross_assign)
run("series of two sdfs", lambda: sdf[sdf["a"] > other["b"]])
run("bool sdf", lambda: bool(sdf))
run("bool sdf series", lambda: sdf["a"] > 0 and sdf["b"] > 0)
'''

SECTIONS = ["arithmetic", "comparisons", "logical", "membership and identity", "abs and apply", "items",
            "column errors", "invalid operations", "context", "dataframe"]


@pytest.fixture(scope="module")
def outputs(run_both_module, kafka_bootstrap):
    return run_both_module(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM)


@pytest.mark.parametrize("section", SECTIONS)
def test_series_test_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_series_test_returns_the_record_tuple(outputs):
    shown = compare_section(outputs, "arithmetic")
    assert "add (9, b'k', 1, [('h', b'v')])" in shown
    errors = compare_section(outputs, "invalid operations")
    assert "other sdf InvalidOperation: All column operations must originate from one `StreamingDataFrame`" in errors

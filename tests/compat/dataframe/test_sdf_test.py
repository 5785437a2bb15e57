"""StreamingDataFrame.test() returns what Quix Streams 3.28 returns, and message_context() works
inside test(ctx=...) (and raises without it), on both packages (real broker: Quix's app.topic()
contacts it)."""

import pytest

pytestmark = pytest.mark.integration

PROGRAM = r'''
import uuid
from quixstreams import Application, MessageContext, message_context

def show(label, func):
    try:
        print(label, repr(func()))
    except Exception as exc:
        print(label, type(exc).__name__)

app = Application(broker_address=BROKER, consumer_group="g-" + uuid.uuid4().hex[:6], loglevel=None)
sdf = app.dataframe(app.topic("sdf-test-" + uuid.uuid4().hex[:6]))

def where(value):
    ctx = message_context()
    return {**value, "where": [ctx.topic, ctx.partition, ctx.offset]}

located = sdf.apply(where)
located["y"] = located["x"] + 1
located = located.filter(lambda v: v["x"] > 0)
ctx = MessageContext(topic="t", partition=3, offset=7, size=0)
show("with ctx", lambda: located.test({"x": 1}, key=b"k", timestamp=5, headers=[("h", b"1")], ctx=ctx))
show("filtered", lambda: located.test({"x": 0}, key=b"k", timestamp=5, ctx=ctx))
show("without ctx", lambda: located.test({"x": 1}, key=b"k", timestamp=5))
expanded = sdf.apply(lambda v: [v, {**v, "copy": True}], expand=True)
show("expand", lambda: expanded.test({"x": 2}, key=b"k", timestamp=1))
keyed = sdf.apply(lambda v, k, t, h: {"key": k, "ts": t}, metadata=True)
show("metadata", lambda: keyed.test({"x": 3}, key=b"kk", timestamp=9))
'''


def test_sdf_test_matches_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + PROGRAM)
    assert out.edge == out.quix
    assert "['t', 3, 7]" in out.edge and "without ctx MessageContextNotSetError" in out.edge

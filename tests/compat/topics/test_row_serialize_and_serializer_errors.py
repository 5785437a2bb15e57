"""``Topic.row_serialize`` (headers ``[]`` for none, the value serializer's extra headers merged, no
timestamp on the message), the errors for unknown serializer names, and JSON schemas refused at
construction: the same program on quixstreams 3.28.1 and on stream_edge, outputs compared.

Errors are shown by their nearest built-in class (``except ValueError`` catches both packages'
unknown-serializer error: stream_edge's ``UnknownSerializerError`` is a ``ValueError``) and message."""

PROGRAM = r'''
def show(label, func):
    try:
        result = func()
    except Exception as exc:
        builtin = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")
        print(label, "->", builtin.__name__, type(exc).__name__ if builtin is Exception else "", repr(str(exc)))
    else:
        print(label, "=", repr(result))

from quixstreams.models import Topic
from quixstreams.models.messagecontext import MessageContext
from quixstreams.models.rows import Row
from quixstreams.models.serializers.json import JSONDeserializer, JSONSerializer
from quixstreams.models.serializers.quix import QuixTimeseriesSerializer

ctx = MessageContext(topic="t", partition=0, offset=1, size=1, leader_epoch=None)
row = lambda value, headers=None: Row(value=value, key=b"k", timestamp=5, context=ctx, headers=headers)
message = lambda m: (m.key, m.value, m.headers, m.timestamp)
t = Topic("t", value_serializer="json", key_serializer="str")
show("no headers", lambda: message(t.row_serialize(row({"a": 1}), key="k")))
show("empty headers", lambda: message(t.row_serialize(row({"a": 1}, headers=[]), key="k")))
show("headers", lambda: message(t.row_serialize(row({"a": 1}, headers=[("h", b"1")]), key="k")))
show("none key", lambda: message(t.row_serialize(row({"a": 1}), key=None)))
q = Topic("q", value_serializer=QuixTimeseriesSerializer(as_legacy=False), key_serializer="str")
show("extra headers", lambda: message(q.row_serialize(row({"a": 1, "Timestamp": 1}), key="k")))
show("extra headers merged", lambda: message(q.row_serialize(
    row({"a": 1, "Timestamp": 1}, headers=[("__Q_ModelKey", b"x"), ("h", b"1")]), key="k")))
for field in ("value_serializer", "key_serializer", "value_deserializer", "key_deserializer"):
    show(f"unknown {field}", lambda: Topic("t", **{field: "nope"}))
    show(f"{field} of another type", lambda: Topic("t", **{field: 5}))
show("aliases", lambda: [Topic("t", value_serializer=n, value_deserializer=n).row_serialize(row(v), key=None).value
                         for n, v in (("string", "x"), ("integer", 5))])
show("json schema error", lambda: JSONSerializer(schema={"type": "nonsense"}))
show("json deserializer schema error", lambda: JSONDeserializer(schema={"type": 5}))
show("json valid schema", lambda: type(JSONSerializer(schema={"type": "object"})).__name__)
'''


def test_row_serialize_and_serializer_errors_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    differing = [(e, q) for e, q in zip(out.edge.splitlines(), out.quix.splitlines()) if e != q]
    assert differing == []
    assert out.edge == out.quix
    assert "no headers = (b'k', b'{\"a\":1}', [], None)" in out.edge
    assert "('h', b'1'), ('__Q_ModelKey', 'TimeseriesData'), ('__Q_CodecId', 'JT')" in out.edge
    assert "json schema error -> Exception SchemaError" in out.edge
    assert 'unknown value_serializer -> ValueError' in out.edge


DESERIALIZE = r'''
import json
from quixstreams.models import Topic
from quixstreams.models.serializers import Deserializer


class Message:
    """Stands in for a consumed confluent_kafka.Message."""

    def __init__(self, value, key=b"k", headers=None, timestamp=(1, 1000)):
        self._value, self._key, self._headers, self._timestamp = value, key, headers, timestamp

    def value(self): return self._value
    def key(self): return self._key
    def headers(self): return self._headers
    def topic(self): return "t"
    def partition(self): return 0
    def offset(self): return 7
    def timestamp(self): return self._timestamp
    def leader_epoch(self): return None
    def __len__(self): return len(self._value or b"")


class Lines(Deserializer):
    @property
    def split_values(self):
        return True

    def __call__(self, value, ctx):
        return [json.loads(line) for line in value.splitlines()]


def extractor(value, headers, timestamp, timestamp_type):
    print("  extractor", value, headers, timestamp, int(timestamp_type))
    return timestamp + value.get("dt", 0) if isinstance(value, dict) else timestamp


def show(label, rows):
    rows = rows if isinstance(rows, list) else [rows]
    print(label, [(r.value, r.key, r.timestamp, r.headers, r.offset) for r in rows])


split = Topic("t", value_deserializer=Lines(), key_deserializer="str", timestamp_extractor=extractor)
show("split", split.row_deserialize(Message(b'{"dt": 5}\n{"dt": 7}\n{"x": 1}', headers=[("h", b"1")])))
show("split none value", split.row_deserialize(Message(None)))
plain = Topic("t", value_deserializer="json", key_deserializer="str", timestamp_extractor=extractor)
show("plain", plain.row_deserialize(Message(b'{"dt": 3}')))
show("plain none value", plain.row_deserialize(Message(None, key=None)))
'''


def test_row_deserialize_and_the_timestamp_extractor_match_quixstreams(run_both):
    out = run_both(DESERIALIZE)
    assert out.edge == out.quix
    # the extractor sees each item of a split value, and the timestamp it returned for the one before
    assert "split [({'dt': 5}, 'k', 1005, [('h', b'1')], 7), ({'dt': 7}, 'k', 1012, [('h', b'1')], 7)" in out.edge

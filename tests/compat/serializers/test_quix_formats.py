"""The Quix formats (TimeseriesData/ParameterData, EventData; legacy envelope or headers) behave as in
Quix Streams 3.28: identical bytes, headers, rows and error messages (compared byte for byte)."""

from _serializer_programs import SHOW

PROGRAM = SHOW + r'''
from quixstreams.models.serializers import MessageField, SerializationContext
from quixstreams.models.serializers.quix import QuixDeserializer, QuixEventsSerializer, QuixTimeseriesSerializer

ctx = SerializationContext("t", MessageField.VALUE, headers=None)
ts, ev, d = QuixTimeseriesSerializer(), QuixEventsSerializer(), QuixDeserializer()
new_ts, new_ev = QuixTimeseriesSerializer(as_legacy=False), QuixEventsSerializer(as_legacy=False)
show("split", lambda: d.split_values)
for label, value in [
        ("full", {"b": 1.1, "a": 1, "c": "string", "d": b"bytes", "e": bytearray(b"ba"), "Tags": {"t1": "x", "t2": None},
                  "Timestamp": 100}),
        ("unicode", {"\u00e9": "\u00fc", "Timestamp": 7}), ("nan", {"a": float("nan"), "Timestamp": 7}),
        ("none skipped", {"a": None}), ("empty", {}), ("tags only", {"Tags": {"t": "v"}}),
        ("no timestamp", {"a": 1}), ("bool", {"a": True}), ("list", {"a": [1]}), ("tags not a dict", {"a": 1, "Tags": 5}),
        ("bigint", {"a": 2 ** 70, "Timestamp": 1}), ("float timestamp", {"a": 1, "Timestamp": 1.5})]:
    show("ts " + label, lambda: ts(value, ctx))
    show("ts new " + label, lambda: new_ts(value, ctx))
    show("ts back " + label, lambda: list(d(ts(value, ctx), ctx)))
show("ts not a mapping", lambda: ts([1], ctx))
show("ts headers", lambda: (ts.extra_headers, new_ts.extra_headers))
show("ts custom dumps", lambda: QuixTimeseriesSerializer(dumps=lambda v: "X")({"a": 1, "Timestamp": 7}, ctx))
for label, value in [("full", {"Id": "an_event", "Value": "v", "Tags": {"t": "x"}, "Timestamp": 10, "other": 1}),
                     ("defaults", {"Timestamp": 5}), ("unicode", {"Id": "\u00e9", "Timestamp": 3}),
                     ("no timestamp", {"Id": "x"}), ("bad id", {"Id": 5}), ("bad value", {"Value": 5}),
                     ("bad tags", {"Tags": 5})]:
    show("ev " + label, lambda: ev(value, ctx))
    show("ev new " + label, lambda: new_ev(value, ctx))
    show("ev back " + label, lambda: list(d(ev(value, ctx), ctx)))
show("ev headers", lambda: (ev.extra_headers, new_ev.extra_headers))
show("ev not a mapping", lambda: ev(5, ctx))

def with_headers(model, codec=b"JT"):
    return SerializationContext("t", MessageField.VALUE, headers=[("__Q_ModelKey", model), ("__Q_CodecId", codec)])

rows = b'{"C":"JT","K":"ParameterData","V":{"BinaryValues":{"d":["Ynl0ZXM=",null]},"StringValues":{"c":["s","s2"]},' \
       b'"NumericValues":{"b":[1.1,null],"a":[1,2]},"Timestamps":[100,200],"TagValues":{"t1":["x","y"],"t2":[null,"z"]}}}'
for label, data, c in [
        ("two rows", rows, ctx),
        ("event list", b'{"C":"JT","K":"EventData[]","V":[{"Id":"x","Value":"","Tags":{},"Timestamp":3}]}', ctx),
        ("codec J", b'{"C":"J","K":"EventData","V":{"Id":"i","Value":"v","Tags":{},"Timestamp":1}}', ctx),
        ("spaced C", b'{"C": "JT","K":"EventData","V":{"Id":"i","Value":"v","Tags":{},"Timestamp":1}}', ctx),
        ("ignored model", b'{"C":"JT","K":"StreamProperties","V":{}}', ctx),
        ("unsupported codec", b'{"C":"JTX","K":"EventData","V":{}}', ctx),
        ("empty codec", b'{"C":"","K":"EventData","V":{}}', ctx),
        ("not legacy, no headers", b'{"a": 1}', ctx),
        ("not json, no headers", b'nope', ctx),
        ("headers timeseries", b'{"NumericValues":{"a":[1]},"Timestamps":[7],"TagValues":{"x":["y"]}}',
         with_headers(b"TimeseriesData")),
        ("headers parameterdata", b'{"NumericValues":{"a":[1]},"Timestamps":[7]}', with_headers(b"ParameterData")),
        ("headers event", b'{"Id":"x","Value":"","Tags":{},"Timestamp":3}', with_headers(b"EventData")),
        ("headers event list", b'[{"Id":"x","Value":"","Tags":{},"Timestamp":3}]', with_headers(b"EventData[]")),
        ("headers ignored", b'{}', with_headers(b"ParameterDefinitions")),
        ("headers unknown model", b'{}', with_headers(b"Heartbeat")),
        ("headers bad codec", b'{}', with_headers(b"EventData", b"PB")),
        ("headers no model", b'{}', SerializationContext("t", MessageField.VALUE, headers=[("__Q_CodecId", b"JT")])),
        ("headers bad json", b'nope', with_headers(b"EventData")),
        ("headers event not a mapping", b'[1]', with_headers(b"EventData")),
        ("timeseries not a mapping", b'{"C":"JT","K":"ParameterData","V":[1]}', ctx)]:
    show("de " + label, lambda: list(d(data, c)))
'''


def test_quix_formats_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert "ts full = b'{\"C\":\"JT\",\"K\":\"ParameterData\",\"V\":{\"BinaryValues\":{\"d\":[\"Ynl0ZXM=\"]" in out.edge
    assert "de ignored model -> IgnoreMessage" in out.edge

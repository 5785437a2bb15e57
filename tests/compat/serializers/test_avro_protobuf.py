"""Avro and Protobuf serializers without a registry behave as in Quix Streams 3.28: the same bytes,
the same values back, the same error types and messages (compared byte for byte)."""

from _serializer_programs import PROTO_TYPES, SHOW

AVRO = SHOW + r'''
from quixstreams.models.serializers import MessageField, SerializationContext, SerializationError
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer

ctx = SerializationContext("t", MessageField.VALUE)
schema = {"type": "record", "name": "Reading", "namespace": "test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "temp", "type": "double"},
    {"name": "count", "type": "long", "default": 0}, {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    {"name": "raw", "type": "bytes", "default": ""}]}
values = [{"sensor": "a", "temp": 21.5}, {"sensor": "b", "temp": -3.25, "count": 2 ** 40, "note": "hi",
          "tags": ["x", "y"], "raw": b"\x00\xff"}, {"sensor": "\u00e9", "temp": 0.0, "note": None}]
s, d = AvroSerializer(schema), AvroDeserializer(schema)
for i, v in enumerate(values):
    show(f"ser {i}", lambda: s(v, ctx))
    show(f"round {i}", lambda: d(s(v, ctx), ctx))
show("json string schema", lambda: AvroSerializer('{"type": "string"}')("x", ctx))
show("bad type", lambda: s({"sensor": 1, "temp": 1.0}, ctx))
show("missing field", lambda: s({"temp": 1.0}, ctx))
show("not a record", lambda: s(5, ctx))
show("strict extra", lambda: AvroSerializer(schema, strict=True)({"sensor": "a", "temp": 1.0, "zzz": 1}, ctx))
show("strict_allow_default", lambda: AvroSerializer(schema, strict_allow_default=True)({"sensor": "a", "temp": 1.0}, ctx))
show("is SerializationError", lambda: issubclass(SerializationError, Exception))
reader = {"type": "record", "name": "Reading", "namespace": "test", "fields": [{"name": "sensor", "type": "string"}]}
show("reader schema", lambda: AvroDeserializer(schema, reader_schema=reader)(s(values[1], ctx), ctx))
union = ["null", {"type": "record", "name": "A", "fields": [{"name": "a", "type": "int"}]},
         {"type": "record", "name": "B", "fields": [{"name": "b", "type": "int"}]}]
show("record name", lambda: AvroDeserializer(union, return_record_name=True)(AvroSerializer(union)({"b": 3}, ctx), ctx))
show("tuple notation", lambda: AvroSerializer(union)(("A", {"a": 1}), ctx))
show("no schema", lambda: AvroDeserializer())
show("serialization config alone", lambda: AvroSerializer(schema, schema_registry_serialization_config=object()))
show("truncated", lambda: type(d(b"\x02", ctx)))
'''

PROTOBUF = PROTO_TYPES + SHOW + r'''
from quixstreams.models.serializers import MessageField, SerializationContext
from quixstreams.models.serializers.protobuf import ProtobufDeserializer, ProtobufSerializer

ctx = SerializationContext("t", MessageField.VALUE)
s = ProtobufSerializer(Reading)
full = {"sensor_id": "a", "temp": 1.5, "count": 3, "kind": "HOT", "tags": ["x", "y"]}
show("dict", lambda: s(full, ctx))
show("camelCase keys", lambda: s({"sensorId": "a"}, ctx))
show("message", lambda: s(Reading(sensor_id="a", count=2), ctx))
show("other message", lambda: s(Other(y=1), ctx))
show("unknown field", lambda: s({"nope": 1}, ctx))
show("unknown field ignored", lambda: ProtobufSerializer(Reading, ignore_unknown_fields=True)({"nope": 1, "count": 5}, ctx))
show("bad value", lambda: s({"count": "x"}, ctx))
show("bad enum", lambda: s({"kind": "COLD"}, ctx))
show("not a dict", lambda: s(5, ctx))
show("deterministic", lambda: ProtobufSerializer(Reading, deterministic=True)({"count": 1}, ctx))
data = s(full, ctx)
show("to dict", lambda: ProtobufDeserializer(Reading)(data, ctx))
show("enums as ints", lambda: ProtobufDeserializer(Reading, use_integers_for_enums=True)(data, ctx))
show("proto names", lambda: ProtobufDeserializer(Reading, preserving_proto_field_name=True)(data, ctx))
show("message back", lambda: str(ProtobufDeserializer(Reading, to_dict=False)(data, ctx)))
show("empty", lambda: ProtobufDeserializer(Reading)(b"", ctx))
show("garbage", lambda: ProtobufDeserializer(Reading)(b"\xff\xff\xff", ctx))
'''


def test_avro_without_registry_matches_quixstreams(run_both, quix_with_serializers):
    out = run_both(AVRO)
    assert out.edge == out.quix
    assert "round 1 = {'sensor': 'b', 'temp': -3.25, 'count': 1099511627776" in out.edge
    assert "bad type -> SerializationError" in out.edge


def test_protobuf_without_registry_matches_quixstreams(run_both, quix_with_serializers):
    out = run_both(PROTOBUF)
    assert out.edge == out.quix
    assert "dict = b'\\n\\x01a" in out.edge
    assert "garbage -> SerializationError" in out.edge

"""The Avro, JSON-schema and Protobuf serializers through a Schema Registry: the same program on
quixstreams 3.28.1 and on stream_edge against one registry (``registry_server.py``), the same bytes,
values, ids and error messages. Both packages hand the work to ``confluent_kafka.schema_registry``."""

import pytest

from _serializer_programs import PROTO_TYPES, SHOW
from registry_server import RegistryServer

PROGRAM = PROTO_TYPES + SHOW + r'''
from quixstreams.models.serializers import (MessageField, SchemaRegistryClientConfig,
                                            SchemaRegistrySerializationConfig, SerializationContext)
from quixstreams.models.serializers.avro import AvroDeserializer, AvroSerializer
from quixstreams.models.serializers.json import JSONDeserializer, JSONSerializer
from quixstreams.models.serializers.protobuf import ProtobufDeserializer, ProtobufSerializer

client = SchemaRegistryClientConfig(url=REGISTRY)
value, key = SerializationContext("readings", MessageField.VALUE), SerializationContext("readings", MessageField.KEY)
avro = {"type": "record", "name": "Reading", "namespace": "test", "fields": [
    {"name": "sensor", "type": "string"}, {"name": "temp", "type": "double"},
    {"name": "note", "type": ["null", "string"], "default": None}]}
s = AvroSerializer(avro, schema_registry_client_config=client)
d = AvroDeserializer(schema_registry_client_config=client)
show("avro", lambda: s({"sensor": "a", "temp": 21.5}, value))
show("avro round", lambda: d(s({"sensor": "b", "temp": -1.0, "note": "hi"}, value), value))
show("avro key subject", lambda: AvroSerializer("string", schema_registry_client_config=client)("k1", key))
show("avro bad value", lambda: s({"sensor": 1, "temp": 1.0}, value))
show("avro not framed", lambda: d(b'{"sensor": "a"}', value))
show("avro lookup only, unregistered", lambda: AvroSerializer(
    {"type": "record", "name": "Fresh", "fields": [{"name": "x", "type": "int"}]}, schema_registry_client_config=client,
    schema_registry_serialization_config=SchemaRegistrySerializationConfig(auto_register_schemas=False))({"x": 1}, value))
show("avro latest", lambda: AvroSerializer(avro, schema_registry_client_config=client,
    schema_registry_serialization_config=SchemaRegistrySerializationConfig(
        auto_register_schemas=False, use_latest_version=True))({"sensor": "c", "temp": 2.0}, value))

js = {"title": "Reading", "type": "object", "properties": {"sensor": {"type": "string"}, "temp": {"type": "number"}},
      "required": ["sensor"]}
j = JSONSerializer(schema=js, schema_registry_client_config=client)
show("json", lambda: j({"sensor": "a", "temp": 1.5}, SerializationContext("events", MessageField.VALUE)))
show("json round", lambda: JSONDeserializer(schema=js, schema_registry_client_config=client)(
    j({"sensor": "z"}, SerializationContext("events", MessageField.VALUE)), SerializationContext("events", MessageField.VALUE)))
show("json invalid", lambda: j({"temp": 1.5}, SerializationContext("events", MessageField.VALUE)))

p = ProtobufSerializer(Reading, schema_registry_client_config=client)
proto_ctx = SerializationContext("protos", MessageField.VALUE)
show("protobuf", lambda: p({"sensor_id": "a", "count": 2, "kind": "HOT"}, proto_ctx))
show("protobuf nested type", lambda: ProtobufSerializer(Inner, schema_registry_client_config=client)({"x": 7}, proto_ctx))
show("protobuf round", lambda: ProtobufDeserializer(Reading, schema_registry_client_config=client)(
    p({"sensor_id": "b", "tags": ["t"]}, proto_ctx), proto_ctx))
show("protobuf deprecated format", lambda: ProtobufSerializer(Inner, schema_registry_client_config=client,
    schema_registry_serialization_config=SchemaRegistrySerializationConfig(use_deprecated_format=True))({"x": 1}, proto_ctx))
'''


@pytest.fixture()
def registry():
    server = RegistryServer()
    yield server
    server.close()


# Listed in docs/compatibility.md: a value the schema refuses is a SerializationError on stream_edge
# (3.28.1 lets fastavro's TypeError through), and a message without the registry header names the
# field (3.28.1's confluent-kafka 2.12 says "Invalid magic byte").
DIFFERENCES = {
    "avro bad value": ("avro bad value -> SerializationError 'must be string on field sensor'",
                       "avro bad value -> TypeError 'must be string on field sensor'"),
    "avro not framed": ("avro not framed -> SerializationError 'Unexpected magic byte 123. This message was not "
                        "produced with a Confluent Schema Registry serializer (the value does not start with the "
                        "5-byte registry header)'", "avro not framed -> SerializationError 'Invalid magic byte'"),
}


def test_registry_serializers_match_quixstreams(run_both, registry):
    out = run_both(f"REGISTRY = {registry.url!r}\n" + PROGRAM)
    edge, quix = out.edge.splitlines(), out.quix.splitlines()
    assert len(edge) == len(quix) == 14
    known = {label: (e, q) for e, q in zip(edge, quix) for label in DIFFERENCES if e.startswith(label + " ")}
    assert known == DIFFERENCES
    same = [(e, q) for e, q in zip(edge, quix) if not any(e.startswith(label + " ") for label in DIFFERENCES)]
    assert [e for e, _ in same] == [q for _, q in same]
    assert "avro = b'\\x00\\x00\\x00\\x00\\x01" in out.edge  # registry-framed, schema id 1
    assert "avro round = {'sensor': 'b', 'temp': -1.0, 'note': 'hi'}" in out.edge
    assert ("POST", "/subjects/readings-key/versions") in registry.requests
    assert "json invalid -> SerializationError" in out.edge
    assert "avro lookup only, unregistered -> SerializationError" in out.edge

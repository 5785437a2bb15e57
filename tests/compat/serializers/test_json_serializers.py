"""JSON serializers with JSON-schema validation behave as in Quix Streams 3.28 (results, error
types and messages), compared byte for byte; registry settings that cannot be honoured raise."""

import pytest

PROGRAM = r'''
from quixstreams.models.serializers import MessageField, SerializationContext
from quixstreams.models.serializers.json import JSONDeserializer, JSONSerializer

ctx = SerializationContext("t", MessageField.VALUE)
schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}

def show(label, func):
    try:
        print(label, repr(func()))
    except Exception as exc:
        print(label, type(exc).__name__, str(exc))

show("valid", lambda: JSONSerializer(schema=schema)({"a": 1}, ctx))
show("invalid value", lambda: JSONSerializer(schema=schema)({"a": "x"}, ctx))
show("invalid message", lambda: JSONDeserializer(schema=schema)(b'{"b": 1}', ctx))
show("valid message", lambda: JSONDeserializer(schema=schema)(b'{"a": 1}', ctx))
show("not json", lambda: JSONDeserializer()(b'{nope', ctx))
show("not serializable", lambda: JSONSerializer()(object(), ctx))
show("custom dumps", lambda: JSONSerializer(dumps=lambda v: '{"custom": true}')({"a": 1}, ctx))
'''


def test_json_serializers_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert "invalid value SerializationError 'x' is not of type 'integer'" in out.edge


def test_schema_registry_settings_that_cannot_be_honoured_raise():
    from stream_edge.models.serializers import SchemaRegistryClientConfig, SchemaRegistrySerializationConfig
    from stream_edge.models.serializers.json import JSONDeserializer, JSONSerializer

    client = SchemaRegistryClientConfig(url="http://127.0.0.1:1")
    with pytest.raises(ValueError, match="schema_registry_client_config"):  # Quix's message
        JSONSerializer(schema={"type": "object"},
                       schema_registry_serialization_config=SchemaRegistrySerializationConfig())
    with pytest.raises(ValueError, match="needs `schema`"):
        JSONSerializer(schema_registry_client_config=client)
    with pytest.raises(TypeError, match="SchemaRegistryClientConfig"):
        JSONDeserializer(schema_registry_client_config={"url": "http://registry:8081"})
    with pytest.raises(ValueError, match="use.latest.version and auto.register.schemas"):
        JSONSerializer(schema={"type": "object"}, schema_registry_client_config=client,
                       schema_registry_serialization_config=SchemaRegistrySerializationConfig(use_latest_version=True))
    assert JSONSerializer(schema_registry_client_config=None) is not None  # None means "not used"

"""Pure logic of the registry support: the Confluent header, the subject strategies, settings
validation, and errors naming what is wrong (the framing itself is confluent-kafka's:
tests/compat/serializers/test_schema_registry.py)."""

import pytest

from stream_edge.models.serializers import SerializationContext, SerializationError
from stream_edge.models.serializers.protobuf import ProtobufDeserializer, ProtobufSerializer
from stream_edge.models.serializers.schema_registry import (SchemaRegistryClientConfig,
                                                            SchemaRegistrySerializationConfig, header,
                                                            record_subject_name_strategy, split_header,
                                                            topic_record_subject_name_strategy,
                                                            topic_subject_name_strategy)


def test_header_round_trip_and_foreign_bytes_are_named():
    assert header(1) == b"\x00\x00\x00\x00\x01"
    assert split_header(header(70000) + b"payload", "value") == (70000, b"payload")
    with pytest.raises(SerializationError, match="magic byte 123.*value"):
        split_header(b'{"a": 1}', "value")
    with pytest.raises(SerializationError, match="key does not start"):
        split_header(b"\x00\x01", "key")


def test_subject_strategies():
    ctx = SerializationContext("readings", "value")
    assert topic_subject_name_strategy(ctx, "test.R") == "readings-value"
    assert topic_record_subject_name_strategy(ctx, "test.R") == "readings-test.R"
    assert record_subject_name_strategy(ctx, "test.R") == "test.R"


def test_settings_are_validated_not_ignored():
    with pytest.raises(ValueError, match="url"):
        SchemaRegistryClientConfig(url="")
    with pytest.raises(ValueError, match="auto_register_schemas"):
        SchemaRegistrySerializationConfig(auto_register_schemas="yes")  # type: ignore[arg-type]
    secret = SchemaRegistryClientConfig(url="http://r:8081", basic_auth_user_info="me:pw")
    assert "pw" not in repr(secret)
    assert secret.as_dict(plaintext_secrets=True)["basic.auth.user.info"] == "me:pw"


def test_avro_serializer_refuses_protobuf_only_settings():
    from stream_edge.models.serializers.avro import AvroSerializer

    with pytest.raises(ValueError, match="use_deprecated_format"):
        AvroSerializer("string", schema_registry_client_config=SchemaRegistryClientConfig(url="http://127.0.0.1:1"),
                       schema_registry_serialization_config=SchemaRegistrySerializationConfig(
                           use_deprecated_format=True))


def test_protobuf_serialization_config_needs_a_client_config():
    from google.protobuf import struct_pb2

    with pytest.raises(ValueError, match="schema_registry_client_config"):
        ProtobufSerializer(struct_pb2.Value, schema_registry_serialization_config=SchemaRegistrySerializationConfig())
    with pytest.raises(ValueError, match="schema_registry_client_config"):
        ProtobufDeserializer(struct_pb2.Value,
                             schema_registry_serialization_config=SchemaRegistrySerializationConfig())


def test_unreachable_registry_is_a_serialization_error_naming_it_and_an_outage():
    from stream_edge import is_outage
    from stream_edge.models.serializers.avro import AvroSerializer

    serializer = AvroSerializer("string", schema_registry_client_config=SchemaRegistryClientConfig(
        url="http://edge:s3cret@127.0.0.1:9"))
    with pytest.raises(SerializationError, match="Schema Registry at http://edge:\\*\\*\\*@127.0.0.1:9 is unavailable") as raised:
        serializer("x", SerializationContext("t", "value"))
    assert is_outage(raised.value) and "s3cret" not in str(raised.value)


def test_registry_settings_a_serializer_cannot_honour_are_refused():
    from stream_edge.models.serializers.json import JSONSerializer

    client = SchemaRegistryClientConfig(url="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="use.latest.version and auto.register.schemas"):
        JSONSerializer(schema={"type": "object"}, schema_registry_client_config=client,
                       schema_registry_serialization_config=SchemaRegistrySerializationConfig(use_latest_version=True))
    with pytest.raises(ValueError, match="skip_known_types"):
        JSONSerializer(schema={"type": "object"}, schema_registry_client_config=client,
                       schema_registry_serialization_config=SchemaRegistrySerializationConfig(skip_known_types=True))

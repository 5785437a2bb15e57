"""Serializers by name or instance; unknown names and bad bytes give clear errors."""

import pytest

from stream_edge.models import Topic
from stream_edge.models.serializers import (DoubleDeserializer, DoubleSerializer, IntegerDeserializer,
                                            IntegerSerializer, JSONDeserializer, JSONSerializer,
                                            SerializationContext, SerializationError, StringDeserializer,
                                            StringSerializer, UnknownSerializerError, resolve_deserializer,
                                            resolve_serializer)

CTX = SerializationContext("t")


@pytest.mark.parametrize("name, value", [("json", {"a": [1, 2.5, None]}), ("str", "héllo"), ("int", -42),
                                         ("double", 2.5), ("bytes", b"\x00\x01")])
def test_round_trip_by_name(name, value):
    data = resolve_serializer(name)(value, CTX)
    assert isinstance(data, bytes)
    assert resolve_deserializer(name)(data, CTX) == value


def test_instances_are_used_as_given():
    ser = JSONSerializer()
    assert resolve_serializer(ser) is ser
    assert Topic("t", value_serializer=StringSerializer(), value_deserializer=StringDeserializer()).value_loads(b"x") == "x"


def test_unknown_name_is_a_clear_error():
    with pytest.raises(UnknownSerializerError, match='Unknown deserializer option "jsn"; valid options are .*json'):
        Topic("t", value_deserializer="jsn")
    with pytest.raises(UnknownSerializerError, match='Unknown serializer option "avro"'):
        resolve_serializer("avro")


def test_type_errors_name_the_topic():
    with pytest.raises(SerializationError, match="topic 't'"):
        IntegerSerializer()("1", CTX)
    with pytest.raises(SerializationError, match="topic 't'"):
        DoubleDeserializer()(b"\x00", CTX)
    with pytest.raises(SerializationError, match="32 bits"):
        IntegerSerializer()(2 ** 40, CTX)
    with pytest.raises(SerializationError, match="JSON"):
        JSONSerializer()({1, 2}, CTX)


def test_fast_forms():
    topic = Topic("t", value_deserializer="json", value_serializer="json")
    assert topic.value_loads(b'{"a":1}') == {"a": 1}
    assert topic.value_dumps({"a": 1}) == b'{"a":1}'
    assert topic.key_loads is None and topic.key_dumps is None  # bytes pass through
    ints = Topic("i", value_deserializer=IntegerDeserializer(), value_serializer=IntegerSerializer())
    assert ints.value_loads(ints.value_dumps(7)) == 7
    assert Topic("d", value_deserializer=DoubleDeserializer()).value_loads(DoubleSerializer()(1.5, CTX)) == 1.5


def test_json_deserializer_with_custom_loads():
    deser = JSONDeserializer(loads=lambda b: {"custom": b.decode()})
    assert Topic("t", value_deserializer=deser).value_loads(b"x") == {"custom": "x"}

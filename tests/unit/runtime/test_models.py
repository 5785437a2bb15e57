"""Topic model, headers, timestamps, ConnectionConfig."""

import pytest

from stream_edge.kafka import ConnectionConfig
from stream_edge.models import MessageTimestamp, Row, TimestampType, Topic, TopicConfig
from stream_edge.models.serializers import IgnoreMessage, JSONDeserializer, SerializationError
from stream_edge.models.topics import merge_headers


class FakeMessage:
    def __init__(self, value, key=b"k", topic="t", partition=1, offset=7, ts=(1, 1000), headers=None):
        self._v, self._k, self._t, self._p, self._o, self._ts, self._h = value, key, topic, partition, offset, ts, headers

    def value(self): return self._v
    def key(self): return self._k
    def topic(self): return self._t
    def partition(self): return self._p
    def offset(self): return self._o
    def timestamp(self): return self._ts
    def headers(self): return self._h
    def leader_epoch(self): return None
    def error(self): return None


def test_row_deserialize_and_timestamp_extractor():
    topic = Topic("t", value_deserializer="json",
                  timestamp_extractor=lambda value, headers, ts, ts_type: value["when"])
    row = topic.row_deserialize(FakeMessage(b'{"when": 42}'))
    assert isinstance(row, Row) and row.value == {"when": 42} and row.timestamp == 42
    assert (row.topic, row.partition, row.offset) == ("t", 1, 7)


def test_row_deserialize_error_names_coordinates_and_ignore():
    topic = Topic("t", value_deserializer="json")
    with pytest.raises(SerializationError, match="topic 't' partition 1 offset 7"):
        topic.row_deserialize(FakeMessage(b"not json"))

    class Skip(JSONDeserializer):
        def __call__(self, value, ctx):
            raise IgnoreMessage()
    assert Topic("t", value_deserializer=Skip()).row_deserialize(FakeMessage(b"{}")) is None


def test_split_values():
    class Split(JSONDeserializer):
        @property
        def split_values(self):
            return True
    rows = Topic("t", value_deserializer=Split()).row_deserialize(FakeMessage(b"[1, 2]"))
    assert [r.value for r in rows] == [1, 2]


def test_newtopic_and_config():
    nt = Topic("t", config=TopicConfig(num_partitions=3, replication_factor=1,
                                       extra_config={"retention.ms": -1})).as_newtopic()
    assert (nt.topic, nt.num_partitions, nt.config) == ("t", 3, {"retention.ms": "-1"})
    with pytest.raises(ValueError):
        Topic("x" * 300)


def test_merge_headers_and_timestamps():
    assert merge_headers({"a": b"1"}, {"b": b"2"}) == [("a", b"1"), ("b", b"2")]
    ts = MessageTimestamp.create(0, 123)  # kept as given, as quixstreams 3.28.1 keeps it
    assert ts.milliseconds == 123 and ts.type == TimestampType.TIMESTAMP_NOT_AVAILABLE


def test_connection_config_masks_secrets():
    cfg = ConnectionConfig.from_librdkafka_dict({"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL",
                                                 "sasl.mechanisms": "PLAIN", "sasl.username": "u",
                                                 "sasl.password": "hunter2"})
    assert cfg.as_librdkafka_dict()["sasl.password"] == "hunter2"
    assert "hunter2" not in repr(cfg) and "hunter2" not in str(cfg) and "***" in repr(cfg)
    assert cfg.as_librdkafka_dict()["sasl.mechanism"] == "PLAIN"
    with pytest.raises(ValueError, match=r"(not connection settings|Extra inputs are not permitted)"):
        ConnectionConfig.from_librdkafka_dict({"bootstrap.servers": "b", "linger.ms": 5})


def test_topic_serialize_and_deserialize_like_v3():
    topic = Topic("t", value_serializer="json", key_serializer="str", value_deserializer="json")
    msg = topic.serialize(key="k1", value={"a": 1}, headers=[("h", b"v")], timestamp_ms=5)
    assert (msg.key, msg.value, msg.headers, msg.timestamp) == (b"k1", b'{"a":1}', [("h", b"v")], 5)
    assert topic.serialize(value=None).value == b"null"  # None goes through the serializer
    assert topic.deserialize(FakeMessage(b'{"a": 2}')).value == {"a": 2}

"""The batch loop on real confluent_kafka.Message objects (no broker needed)."""

import orjson
import pytest
from confluent_kafka import KafkaError, Message

from stream_edge.error_callbacks import default_on_consumer_error, default_on_processing_error
from stream_edge.models import Topic
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.loop import BatchProcessor, ConsumerError, OutputCounter, TopicRoute, last_offsets


def msg(value, offset=0, topic="t", partition=0, key=b"k", error=None):
    return Message(topic=topic, partition=partition, offset=offset, key=key, value=value,
                   timestamp=(1, 1000 + offset), headers=None, error=error)


def processor(topics_values, counter=None, on_consumer_error=default_on_consumer_error, **kw):
    ctx, out, routes = ProcessingContext(), [], {}
    for name, value_deserializer in topics_values:
        topic = Topic(name, value_deserializer=value_deserializer)

        def executor(v, k, t, h, name=name):
            out.append((name, v, k, t))
            if counter is not None:
                counter.count += 1
        routes[name] = TopicRoute.of(topic, executor)
    return BatchProcessor(routes, ctx, on_consumer_error, default_on_processing_error, counter=counter, **kw), out, ctx


def test_inline_json_path_and_tombstones():
    process, out, ctx = processor([("t", "json")])
    batch = [msg(orjson.dumps({"a": 1}), 0), msg(None, 1)]
    assert process(batch) == 2
    assert out == [("t", {"a": 1}, b"k", 1000), ("t", None, b"k", 1001)]
    assert ctx.cursor.message is batch[-1]


def test_bytes_topic_single_path_and_multi_topic_path():
    process, out, _ = processor([("t", "bytes")])
    process([msg(b"raw", 0)])
    assert out == [("t", b"raw", b"k", 1000)]
    process, out, _ = processor([("a", "json"), ("b", "str")])
    process([msg(b"1", 0, topic="a"), msg(b"x", 0, topic="b")])
    assert out == [("a", 1, b"k", 1000), ("b", "x", b"k", 1000)]


def test_count_stops_after_the_message_reaching_it():
    counter = OutputCounter(limit=2)
    process, out, _ = processor([("t", "json")], counter=counter)
    assert process([msg(b"1", 0), msg(b"2", 1), msg(b"3", 2)]) == 2
    assert [v for _, v, _, _ in out] == [1, 2]


def test_error_messages_go_to_on_consumer_error():
    seen = []

    def on_error(exc, message, logger):
        seen.append(str(exc))
        return True
    process, out, _ = processor([("t", "json")], on_consumer_error=on_error)
    process([msg(None, 0, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)), msg(b"7", 1)])
    assert out == [("t", 7, b"k", 1001)] and "Unknown topic" in seen[0]
    strict, _, _ = processor([("t", "json")])
    with pytest.raises(ConsumerError, match="Unknown topic"):
        strict([msg(None, 0, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART))])
    eof, _, _ = processor([("t", "json")])
    assert eof([msg(None, 5, error=KafkaError(KafkaError._PARTITION_EOF))]) == 1  # informational only


def test_last_offsets_scan():
    batch = [msg(b"1", 3, partition=0), msg(b"1", 7, partition=1), msg(b"1", 4, partition=0)]
    assert last_offsets(batch, 3, 2) == {("t", 0): 4, ("t", 1): 7}
    assert last_offsets(batch, 2, 2) == {("t", 0): 3, ("t", 1): 7}


class Lines:
    """A value deserializer splitting a message into one JSON value per line."""

    split_values = True

    def __call__(self, value, ctx):
        return [orjson.loads(line) for line in value.splitlines()]


def test_split_values_get_a_timestamp_each_as_topic_row_deserialize_gives_them():
    seen = []

    def extractor(value, headers, timestamp, timestamp_type):
        seen.append((value, timestamp, int(timestamp_type)))
        return timestamp + value["dt"] if value is not None else timestamp

    topic = Topic("t", value_deserializer=Lines(), timestamp_extractor=extractor)
    out = []
    process = BatchProcessor({"t": TopicRoute.of(topic, lambda v, k, t, h: out.append((v, k, t, h)))},
                             ProcessingContext(), default_on_consumer_error, default_on_processing_error)
    message = msg(b'{"dt": 5}\n{"dt": 7}', 0)
    process([message])
    # each item sees the timestamp the extractor gave the item before it (1000, then 1005)
    assert [t for _, _, t, _ in out] == [1005, 1012]
    assert seen == [({"dt": 5}, 1000, 1), ({"dt": 7}, 1005, 1)]
    rows = topic.row_deserialize(message)
    assert [(r.value, r.key, r.timestamp, r.headers) for r in rows] == out
    process([msg(None, 1)])  # a tombstone of a split topic is one record, as in row_deserialize
    assert out[-1] == (None, b"k", 1001, None) and seen[-1] == (None, 1001, 1)


def test_split_values_all_stamped_before_any_is_processed():
    def extractor(value, headers, timestamp, timestamp_type):
        if value["dt"] < 0:
            raise ValueError("negative dt")
        return timestamp

    failures, out = [], []
    topic = Topic("t", value_deserializer=Lines(), timestamp_extractor=extractor)
    process = BatchProcessor({"t": TopicRoute.of(topic, lambda v, k, t, h: out.append(v))}, ProcessingContext(),
                             default_on_consumer_error, lambda exc, row, logger: failures.append(str(exc)) or True)
    process([msg(b'{"dt": 1}\n{"dt": -1}', 0)])
    assert out == [] and failures == ["negative dt"]

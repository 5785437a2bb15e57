"""The dead-letter topic's rules as pure logic: who decides (the callback first), what is produced
(the original bytes, timestamp and headers plus the error headers), and the Application's checks.
The broker-side behaviour is in tests/integration/runtime/test_dead_letter.py."""

import logging

import pytest
from confluent_kafka import Message

from stream_edge import Application
from stream_edge.processing.dead_letter import HEADER_PREFIX, DeadLetterTopic


def message() -> Message:
    return Message(topic="orders", partition=2, offset=41, key=b"k-1", value=b"\xff not json",
                   headers=[("trace", b"abc")], timestamp=(1, 1_700_000_000_000))


class Recorder:
    def __init__(self) -> None:
        self.produced: list = []

    def __call__(self, topic, **kwargs) -> None:
        self.produced.append((topic, kwargs))


def test_without_a_callback_every_failing_record_is_dead_lettered_as_it_was_read(caplog):
    produce = Recorder()
    dlq = DeadLetterTopic("orders-dlq", produce, None, None)
    with caplog.at_level(logging.WARNING, logger="stream_edge"):
        assert dlq.deserialization_failed(ValueError("bad byte 0xff"), message())
    [(topic, sent)] = produce.produced
    assert topic == "orders-dlq" and sent["value"] == b"\xff not json" and sent["key"] == b"k-1"
    assert sent["timestamp"] == 1_700_000_000_000
    headers = sent["headers"]
    assert headers[0] == ("trace", b"abc")  # the record's own headers first, kept
    assert dict(headers[1:]) == {
        HEADER_PREFIX + "stage": b"deserialization", HEADER_PREFIX + "topic": b"orders",
        HEADER_PREFIX + "partition": b"2", HEADER_PREFIX + "offset": b"41",
        HEADER_PREFIX + "exception.class.name": b"ValueError", HEADER_PREFIX + "exception.message": b"bad byte 0xff"}
    assert "topic 'orders' partition 2 offset 41" in caplog.text and dlq.sent == 1


def test_the_callback_decides_first_true_dead_letters_false_stops():
    produce = Recorder()
    seen = []

    def on_processing_error(exc, row, logger):
        seen.append(row)
        return isinstance(exc, KeyError)

    dlq = DeadLetterTopic("dlq", produce, None, on_processing_error)
    assert dlq.processing_failed(KeyError("sensor"), "row-1", message())
    assert not dlq.processing_failed(RuntimeError("fatal"), "row-2", message())
    assert seen == ["row-1", "row-2"] and len(produce.produced) == 1
    assert dict(produce.produced[0][1]["headers"])[HEADER_PREFIX + "exception.message"] == b"'sensor'"


def test_a_long_exception_text_is_cut_and_a_missing_timestamp_is_left_to_the_broker():
    produce = Recorder()
    msg = Message(topic="t", partition=0, offset=1, value=b"v", timestamp=(0, -1))
    DeadLetterTopic("dlq", produce, None, None).send(msg, ValueError("x" * 10_000), "processing")
    sent = produce.produced[0][1]
    assert sent["timestamp"] is None and len(dict(sent["headers"])[HEADER_PREFIX + "exception.message"]) == 4096


@pytest.mark.parametrize("bad", ["", "  ", 5])
def test_the_application_refuses_a_dead_letter_topic_that_is_not_a_name(bad):
    with pytest.raises(ValueError, match="dead_letter_topic must be a topic name"):
        Application("127.0.0.1:1", dead_letter_topic=bad, loglevel=None)

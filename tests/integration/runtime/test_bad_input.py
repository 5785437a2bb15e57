"""Bad input on the real broker: clear errors or the documented callbacks; offsets never skip ahead."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from stream_edge.models.serializers import UnknownSerializerError
from stream_edge.processing.loop import ConsumerError
from stream_edge.rowproducer import ProducerError

pytestmark = pytest.mark.integration

NOT_COMMITTED = -1001


def _mixed_input(produce, topic):
    produce(topic, [(b"k0", {"i": 0}), (b"k1", {"i": 1}), (b"k2", b"{not json"), (b"k3", {"i": 3})])


def test_non_json_value_stops_with_coordinates_and_commits_nothing_past_it(new_app, make_topic, produce, committed):
    src = make_topic()
    _mixed_input(produce, src)
    app, group = new_app(commit_every=1)  # commit after every message: the good ones before are committed
    app.dataframe(app.topic(src)).update(lambda v: None)
    with pytest.raises(ConsumerError, match=rf"topic '{src}' partition 0 offset 2"):
        app.run(timeout=30)
    assert committed(group, src)[0] in (NOT_COMMITTED, 0, 1, 2)  # never past the bad message at offset 2


def test_non_json_value_goes_through_on_consumer_error_and_app_continues(new_app, make_topic, produce, committed):
    src = make_topic()
    _mixed_input(produce, src)
    errors = []

    def on_consumer_error(exc, message, logger):
        errors.append((str(exc), message.offset()))
        return True  # ignore and continue

    app, group = new_app(on_consumer_error=on_consumer_error)
    app.dataframe(app.topic(src)).apply(lambda v: v["i"])
    assert [r["_value"] for r in app.run(count=3, timeout=30)] == [0, 1, 3]
    assert errors and errors[0][1] == 2 and "offset 2" in errors[0][0] and "value" in errors[0][0]
    assert committed(group, src)[0] == 4


def test_processing_error_callback_true_skips_and_default_stops(new_app, make_topic, produce, committed):
    src = make_topic()
    produce(src, [(b"k", {"d": d}) for d in (1, 0, 2)])
    seen = []

    def on_processing_error(exc, row, logger):
        seen.append((type(exc).__name__, row.value, row.offset, row.topic))
        return True

    app, group = new_app(on_processing_error=on_processing_error)
    app.dataframe(app.topic(src)).apply(lambda v: 10 // v["d"])
    assert [r["_value"] for r in app.run(count=2, timeout=30)] == [10, 5]
    assert seen == [("ZeroDivisionError", {"d": 0}, 1, src)]
    assert committed(group, src)[0] == 3

    failing, group2 = new_app(commit_every=1)
    failing.dataframe(failing.topic(src)).apply(lambda v: 10 // v["d"])
    with pytest.raises(ZeroDivisionError):
        failing.run(timeout=30)
    assert committed(group2, src)[0] in (NOT_COMMITTED, 0, 1)  # offset 1 (the failing one) is not committed


def test_an_error_callback_that_raises_stops_without_committing(new_app, make_topic, produce, committed):
    src = make_topic()
    produce(src, [(b"k", {"d": 0})])

    def broken_callback(exc, row, logger):
        raise RuntimeError("callback bug")

    app, group = new_app(on_processing_error=broken_callback)
    app.dataframe(app.topic(src)).apply(lambda v: 1 // v["d"])
    with pytest.raises(RuntimeError, match="callback bug"):
        app.run(timeout=30)
    assert committed(group, src)[0] == NOT_COMMITTED


def test_oversized_output_goes_through_on_producer_error(new_app, make_topic, produce, committed, read_topic,
                                                          kafka_bootstrap):
    src, dst = make_topic(), make_topic()
    big = Producer({"bootstrap.servers": kafka_bootstrap, "message.max.bytes": 4_000_000})
    big.produce(src, b'{"blob": "' + b"x" * 1_500_000 + b'"}', b"big")
    big.produce(src, b'{"blob": "small"}', b"small")
    assert big.flush(30) == 0

    errors = []

    def on_producer_error(exc, row, logger):
        errors.append((str(exc), row.offset if row is not None else None))
        return True

    app, group = new_app(on_producer_error=on_producer_error)
    app.dataframe(app.topic(src)).to_topic(app.topic(dst))
    app.run(count=2, timeout=30)
    assert len(errors) == 1 and errors[0][1] == 0 and "MSG_SIZE_TOO_LARGE" in errors[0][0].upper().replace(" ", "_")
    assert [m.key() for m in read_topic(dst, 1)] == [b"small"]
    assert committed(group, src)[0] == 2

    strict, group2 = new_app()
    strict.dataframe(strict.topic(src)).to_topic(strict.topic(dst))
    with pytest.raises(ProducerError, match=rf"topic '{src}' partition 0 offset 0"):
        strict.run(timeout=30)
    assert committed(group2, src)[0] == NOT_COMMITTED


def test_unknown_serializer_name_is_a_clear_error(new_app):
    app, _ = new_app()
    with pytest.raises(UnknownSerializerError, match='Unknown deserializer option "yaml"'):
        app.topic("anything", value_deserializer="yaml")
    with pytest.raises(UnknownSerializerError, match='Unknown serializer option "xml"'):
        app.topic("anything", value_serializer="xml")

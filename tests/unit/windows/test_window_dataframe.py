"""Windows through the runtime's StreamingDataFrame (``sdf.test``) with a real RocksDB store."""

from __future__ import annotations

from datetime import timedelta

import pytest

from stream_edge import Application
from stream_edge.dataframe.exceptions import InvalidOperation
from stream_edge.models.messagecontext import MessageContext


@pytest.fixture
def app(tmp_path):
    # no broker is contacted: topics are only defined, stores have no changelog
    return Application(broker_address="127.0.0.1:9", consumer_group="windows-unit", state_dir=tmp_path,
                       use_changelog_topics=False)


def feed(app, sdf, topic, events, partition=0):
    manager = app.processing_context.state_manager
    manager.on_partition_assign(topic.name, partition, -1001)
    out = []
    for offset, (key, ts, value) in enumerate(events):
        out.append(sdf.test(value, key=key, timestamp=ts, ctx=MessageContext(topic.name, partition, offset, 0, None)))
    return out


def test_tumbling_mean_final_emits_window_records_with_start_timestamp(app):
    topic = app.topic("readings")
    sdf = app.dataframe(topic)
    sdf = sdf.apply(lambda v: v["t"]).tumbling_window(timedelta(seconds=1)).mean().final()
    out = feed(app, sdf, topic, [(b"s1", 1000, {"t": 1}), (b"s1", 1500, {"t": 2}), (b"s2", 1200, {"t": 5}),
                                 (b"s1", 2000, {"t": 9})])
    assert out == [[], [], [], [({"start": 1000, "end": 2000, "value": 1.5}, b"s1", 1000, None)]]


def test_none_keys_are_ignored_with_a_log_line(app, caplog):
    topic = app.topic("readings")
    sdf = app.dataframe(topic).tumbling_window(10).count().current()
    out = feed(app, sdf, topic, [(None, 1, 1), (b"k", 2, 1)])
    assert out == [[], [({"start": 0, "end": 10, "value": 1}, b"k", 0, None)]]
    assert "key is None" in caplog.text


def test_late_message_is_logged(app, caplog):
    topic = app.topic("readings")
    sdf = app.dataframe(topic).hopping_window(10, 5, grace_ms=2).sum().current()
    out = feed(app, sdf, topic, [(b"k", 20, 1), (b"k", 3, 1)])
    assert out[1] == []
    assert "late_by_ms=" in caplog.text and "offset='1'" in caplog.text


def test_sliding_and_window_names(app):
    topic = app.topic("readings")
    window = app.dataframe(topic).sliding_window(timedelta(milliseconds=10), name="w").max()
    assert window.name == "w_sliding_window_10_max"
    sdf = window.current()
    out = feed(app, sdf, topic, [(b"k", 10, 1), (b"k", 15, 3)])
    assert out == [[({"start": 0, "end": 10, "value": 1}, b"k", 0, None)],
                   [({"start": 5, "end": 15, "value": 3}, b"k", 5, None)]]


def test_collect_is_final_only(app):
    topic = app.topic("readings")
    with pytest.raises(InvalidOperation):
        app.dataframe(topic).tumbling_window(10).collect().current()


def test_partition_closing_strategy_closes_every_key_and_survives_restart(app, tmp_path):
    topic = app.topic("readings")
    sdf = app.dataframe(topic).tumbling_window(10).sum().final(closing_strategy="partition")
    out = feed(app, sdf, topic, [(b"a", 1, 1), (b"b", 2, 2), (b"b", 12, 3), (b"a", 5, 9)])
    assert out == [[], [], [({"start": 0, "end": 10, "value": 1}, b"a", 0, None),
                            ({"start": 0, "end": 10, "value": 2}, b"b", 0, None)], []]  # a@5 is late
    manager = app.processing_context.state_manager
    manager.prepare_checkpoint({(topic.name, 0): 3})
    manager.commit_checkpoint({(topic.name, 0): 3})
    manager.close()

    again = Application(broker_address="127.0.0.1:9", consumer_group="windows-unit", state_dir=tmp_path,
                        use_changelog_topics=False)
    topic = again.topic("readings")
    sdf = again.dataframe(topic).tumbling_window(10).sum().final(closing_strategy="partition")
    again.processing_context.state_manager.on_partition_assign(topic.name, 0, 4)
    # the partition's event time (12) and b's open window come back from RocksDB
    assert sdf.test(1, key=b"c", timestamp=25, ctx=MessageContext(topic.name, 0, 4, 0, None)) == [
        ({"start": 10, "end": 20, "value": 3}, b"b", 10, None)]
    with pytest.raises(ValueError, match="closing_strategy"):
        again.dataframe(again.topic("other")).sliding_window(10).sum().final(closing_strategy="partition")

"""Application end to end on the real broker: topics, run modes, to_topic, group_by, commits."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest

from stream_edge import Application
from stream_edge.models import TopicConfig
from stream_edge.models.topics import TopicNotFoundError
from stream_edge.models.topics.exceptions import TopicConfigurationMismatch

pytestmark = pytest.mark.integration


def test_pipeline_to_topic_with_key_and_committed_offsets(new_app, make_topic, produce, read_topic, committed):
    src, dst = make_topic(partitions=2), make_topic()
    produce(src, [(f"k{i}".encode(), {"id": i, "v": i % 4}) for i in range(40)])
    app, group = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.apply(lambda v: {**v, "double": v["v"] * 2}).filter(lambda v: v["v"] != 0)
    sdf["big"] = sdf["double"] > 4
    sdf.to_topic(app.topic(dst), key=lambda v: str(v["id"]).encode())
    collected = app.run(count=30, timeout=30)
    assert len(collected) == 30 and all(c["v"] != 0 for c in collected)
    out = read_topic(dst, 30)
    assert sorted(int(m.key()) for m in out) == sorted(i for i in range(40) if i % 4)
    assert all(orjson.loads(m.value())["big"] == (orjson.loads(m.value())["v"] * 2 > 4) for m in out)
    offsets = committed(group, src, 2)
    assert sum(offsets.values()) == 40  # every input message processed and committed


def test_run_collects_metadata_and_stops_on_timeout(new_app, make_topic, produce):
    src = make_topic()
    produce(src, [(b"a", {"x": 1}), (b"b", {"x": 2})], headers=[("h", b"1")], timestamp=1_700_000_000_000)
    app, _ = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.apply(lambda v: v["x"])
    rows = app.run(timeout=2, metadata=True)
    assert [r["_value"] for r in rows] == [1, 2]
    assert rows[0]["_key"] == b"a" and rows[0]["_timestamp"] == 1_700_000_000_000
    assert rows[0]["_headers"] == [("h", b"1")] and rows[0]["_topic"] == src and rows[0]["_offset"] == 0


def test_set_timestamp_and_headers_reach_the_output(new_app, make_topic, produce, read_topic):
    src, dst = make_topic(), make_topic()
    produce(src, [(b"k", {"when": 1_600_000_000_123})])
    app, _ = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.set_timestamp(lambda v, k, ts, h: v["when"]).set_headers(lambda v, k, ts, h: [("source", b"edge")])
    sdf.to_topic(app.topic(dst))
    app.run(count=1, timeout=30)
    (msg,) = read_topic(dst, 1)
    assert msg.timestamp()[1] == 1_600_000_000_123 and msg.headers() == [("source", b"edge")]


def test_group_by_repartitions_through_an_internal_topic(new_app, make_topic, produce, read_topic):
    src, dst = make_topic(partitions=2), make_topic()
    produce(src, [(f"order-{i}".encode(), {"customer": f"c{i % 3}", "amount": i}) for i in range(12)])
    app, group = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.group_by("customer")
    sdf.to_topic(app.topic(dst, key_serializer="json"))
    app.run(count=12, timeout=30)
    out = read_topic(dst, 12)
    assert sorted(orjson.loads(m.key()) for m in out) == sorted(f"c{i % 3}" for i in range(12))
    repartition = f"repartition__{group}--{src}--customer"
    assert repartition in app.topic_manager.all_topics
    assert app.topic_manager.all_topics[repartition].config.num_partitions == 2


def test_branches_and_multiple_outputs(new_app, make_topic, produce, read_topic):
    src, hot, cold = make_topic(), make_topic(), make_topic()
    produce(src, [(b"k", {"t": t}) for t in (10, 30, 50)])
    app, _ = new_app()
    sdf = app.dataframe(app.topic(src))
    sdf[sdf["t"] > 20].to_topic(app.topic(hot))
    sdf[sdf["t"] <= 20].to_topic(app.topic(cold))
    app.run(count=3, timeout=30)
    assert sorted(orjson.loads(m.value())["t"] for m in read_topic(hot, 2)) == [30, 50]
    assert [orjson.loads(m.value())["t"] for m in read_topic(cold, 1)] == [10]


def test_setup_topics_creates_with_config_and_validates(new_app, kafka_admin):
    app, _ = new_app()
    name = f"created-{uuid.uuid4().hex[:8]}"
    app.dataframe(app.topic(name, config=TopicConfig(num_partitions=3, replication_factor=1,
                                                     extra_config={"retention.ms": "3600000"})))
    app.setup_topics()
    md = kafka_admin.list_topics(name, timeout=10).topics[name]
    assert len(md.partitions) == 3
    assert app.topic_manager._admin.inspect_topics([name])[name].extra_config["retention.ms"] == "3600000"

    strict, _ = new_app(auto_create_topics=False)
    with pytest.raises(TopicNotFoundError, match="missing-"):  # at definition, as in Quix Streams 3.28
        strict.topic(f"missing-{uuid.uuid4().hex[:8]}")


def test_validate_all_topics_checks_a_changelog_against_every_topic_of_its_stream(new_app, make_topic):
    # a changelog of two concatenated 2-partition topics, defined (and created) with 1 partition: the
    # definition matches the broker, the stream's topics do not
    app, _ = new_app()
    manager = app.topic_manager
    left, right = manager.topic(make_topic(partitions=2)), manager.topic(make_topic(partitions=2))
    stream_id = manager.stream_id_from_topics([left, right])
    changelog = manager.changelog_topic(stream_id=stream_id, store_name="s",
                                        config=TopicConfig(num_partitions=1, replication_factor=1))
    with pytest.raises(TopicConfigurationMismatch, match=f'changelog topic "{changelog.name}": expected 2, got 1'):
        manager.validate_all_topics()


def test_environment_variables(monkeypatch, kafka_bootstrap, make_topic, produce):
    src = make_topic()
    produce(src, [(b"k", {"a": 1})])
    monkeypatch.setenv("Quix__Broker__Address", kafka_bootstrap)
    monkeypatch.setenv("Quix__Consumer__Group", f"env-{uuid.uuid4().hex[:8]}")
    app = Application(auto_offset_reset="earliest", loglevel=None)
    assert app.config.broker_address.bootstrap_servers == kafka_bootstrap
    assert app.config.consumer_group.startswith("env-")
    app.dataframe(app.topic(src))
    assert app.run(count=1, timeout=30) == [{"a": 1}]
    monkeypatch.delenv("Quix__Broker__Address")
    with pytest.raises(ValueError, match="broker_address"):
        Application(loglevel=None)


def test_commit_every_commits_before_the_interval(new_app, make_topic, produce, committed):
    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(25)])
    app, group = new_app(commit_interval=3600, commit_every=10)
    seen = []
    sdf = app.dataframe(app.topic(src))
    sdf.update(lambda v: seen.append(v["i"]))

    def check_commits(value):
        if value["i"] == 15:  # offsets 0..9 were committed by commit_every=10, long before the interval
            assert committed(group, src)[0] == 10
    sdf.update(check_commits)
    app.run(count=25, timeout=30)
    assert seen == list(range(25)) and committed(group, src)[0] == 25


def test_get_producer_and_consumer(new_app, make_topic):
    topic = make_topic()
    app, _ = new_app()
    with app.get_producer() as producer:
        producer.produce(topic=topic, key=b"k", value=b"v")
    with app.get_consumer() as consumer:
        consumer.subscribe([topic])
        deadline, msg = time.monotonic() + 20, None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
        assert msg is not None and msg.value() == b"v"


def test_stop_from_another_thread(new_app, make_topic, produce, committed):
    import threading
    src = make_topic()
    produce(src, [(b"k", {"a": 1})])
    app, group = new_app()
    app.dataframe(app.topic(src)).update(lambda v: threading.Timer(0.5, app.stop).start())
    app.run()  # returns (pytest-timeout guards a hang) after committing a final checkpoint
    assert committed(group, src)[0] == 1


def test_on_message_processed_and_message_context(new_app, make_topic, produce):
    from stream_edge import message_context

    src = make_topic(partitions=2)
    produce(src, [(b"k", {"i": 0}), (b"k", {"i": 1})], partition=1)
    processed = []
    app, _ = new_app(on_message_processed=lambda topic, partition, offset: processed.append((topic, partition, offset)))
    sdf = app.dataframe(app.topic(src))
    sdf = sdf.apply(lambda v: (message_context().partition, message_context().offset))
    assert [r["_value"] for r in app.run(count=2, timeout=30)] == [(1, 0), (1, 1)]
    assert processed == [(src, 1, 0), (src, 1, 1)]


def test_general_path_key_deserializer_extractor_tombstone_and_two_topics(new_app, make_topic, produce):
    first, second = make_topic(), make_topic()
    produce(first, [(b"k1", {"event_ms": 111}), (b"k2", None)])  # None value: a tombstone
    produce(second, [(b"\x00\x00\x00\x07", b"\x00\x00\x00\x2a")])
    app, _ = new_app()
    sdf1 = app.dataframe(app.topic(first, key_deserializer="str",
                                   timestamp_extractor=lambda value, headers, ts, ts_type:
                                   value["event_ms"] if value else ts))
    sdf1.apply(lambda value, key, ts, headers: ("first", key, ts if value else None), metadata=True)
    sdf2 = app.dataframe(app.topic(second, key_deserializer="int", value_deserializer="int"))
    sdf2.apply(lambda value, key, ts, headers: ("second", key, value), metadata=True)
    rows = sorted(r["_value"] for r in app.run(count=3, timeout=30))
    assert rows == [("first", "k1", 111), ("first", "k2", None), ("second", 7, 42)]


def test_run_twice_resumes_from_the_committed_offsets(new_app, make_topic, produce):
    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(3)])
    app, _ = new_app()
    app.dataframe(app.topic(src)).apply(lambda v: v["i"])
    assert [r["_value"] for r in app.run(count=2, timeout=30)] == [0, 1]
    produce(src, [(b"k", {"i": 3})])
    assert [r["_value"] for r in app.run(count=2, timeout=30)] == [2, 3]


def test_to_topic_with_a_directly_built_topic_creates_it(new_app, make_topic, produce, read_topic):
    from stream_edge.models import Topic

    src = make_topic()
    produce(src, [(b"k", {"a": 1})])
    app, _ = new_app()
    direct = Topic(f"direct-{uuid.uuid4().hex[:8]}", value_serializer="json", config=TopicConfig(num_partitions=2))
    app.dataframe(app.topic(src)).to_topic(direct)
    app.run(count=1, timeout=30)
    assert [orjson.loads(m.value()) for m in read_topic(direct.name, 1)] == [{"a": 1}]

"""sdf.sink() with the v3 sink contract (flush per checkpoint, backpressure), and sources."""

from __future__ import annotations

import csv
import time
import uuid

import orjson
import pytest

from stream_edge.sinks import BatchingSink, SinkBackpressureError
from stream_edge.sources import CSVSource, KafkaReplicatorSource, Source

pytestmark = pytest.mark.integration


class ListSink(BatchingSink):
    def __init__(self, backpressure_once: bool = False, backpressure_partition: int | None = None):
        self.connected = False
        super().__init__(on_client_connect_success=lambda: setattr(self, "connected", True))
        self.written, self.backpressured = [], 0
        self._backpressure_once = backpressure_once
        self._partition = backpressure_partition

    def write(self, batch):
        if (self._backpressure_once and not self.backpressured
                and (self._partition is None or batch.partition == self._partition)):
            self.backpressured += 1
            raise SinkBackpressureError(retry_after=0.5)
        self.written.extend((item.offset, item.value["i"]) for item in batch)


def test_sink_receives_every_record_and_offsets_are_committed_after_flush(new_app, make_topic, produce, committed):
    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(20)])
    sink = ListSink()
    app, group = new_app(commit_every=5)
    app.dataframe(app.topic(src)).sink(sink)
    app.run(count=20, timeout=30)
    assert sink.connected
    assert sorted(v for _, v in sink.written) == list(range(20))
    assert committed(group, src)[0] == 20


def test_backpressure_pauses_rewinds_and_resumes_without_loss(new_app, make_topic, produce, committed):
    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(10)])
    sink = ListSink(backpressure_once=True)
    app, group = new_app(commit_interval=0.2)
    app.dataframe(app.topic(src)).sink(sink)
    app.run(timeout=4)
    assert sink.backpressured == 1
    assert sorted(v for _, v in sink.written) == list(range(10))  # the dropped batch was consumed again
    assert committed(group, src)[0] == 10


def test_exactly_once_backpressure_commits_no_output_twice(new_app, make_topic, produce, read_topic, committed):
    """One partition's sink backpressures under exactly-once: the outputs already produced in the
    checkpoint's transaction must not be committed while that partition is replayed."""
    src, out = make_topic(partitions=2), make_topic(partitions=2)
    for partition in (0, 1):
        produce(src, [(f"k{partition}".encode(), {"i": partition * 100 + i}) for i in range(20)], partition=partition)
    sink = ListSink(backpressure_once=True, backpressure_partition=1)
    app, group = new_app(commit_interval=0.5, processing_guarantee="exactly-once")
    sdf = app.dataframe(app.topic(src))
    sdf.to_topic(app.topic(out))
    sdf.sink(sink)
    app.run(timeout=4)
    assert sink.backpressured == 1
    expected = sorted(p * 100 + i for p in (0, 1) for i in range(20))
    values = sorted(orjson.loads(m.value())["i"] for m in read_topic(out, 40, settle=1.0))
    assert values == expected  # read_committed: each output exactly once
    # The whole transaction was replayed: the sink (at-least-once) saw every record, some twice.
    assert sorted(set(v for _, v in sink.written)) == expected
    assert committed(group, src, partitions=2) == {0: 20, 1: 20}


def test_csv_source_feeds_a_dataframe(new_app, tmp_path, read_topic):
    path = tmp_path / "rows.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "temp"])
        writer.writeheader()
        writer.writerows({"id": str(i), "temp": str(20 + i)} for i in range(5))
    app, _ = new_app()
    source = CSVSource(path, name=f"csv-{uuid.uuid4().hex[:6]}", key_extractor=lambda row: row["id"],
                       timestamp_extractor=lambda row: 1_700_000_000_000 + int(row["id"]))
    sdf = app.dataframe(source=source)
    sdf = sdf.apply(lambda row, key, ts, headers: (key, ts, float(row["temp"])), metadata=True)
    rows = app.run(count=5, timeout=30)
    assert [r["_value"] for r in rows] == [(str(i).encode(), 1_700_000_000_000 + i, 20.0 + i) for i in range(5)]
    assert f"source__{source.name}" in app.topic_manager.all_topics


def test_kafka_replicator_source_copies_a_topic(new_app, make_topic, produce, kafka_bootstrap):
    remote = make_topic(partitions=2)
    produce(remote, [(f"k{i}".encode(), {"i": i}) for i in range(8)], headers=[("origin", b"remote")])
    app, _ = new_app()
    source = KafkaReplicatorSource(name=f"mirror-{uuid.uuid4().hex[:6]}", app_config=app.config, topic=remote,
                                   broker_address=kafka_bootstrap, auto_offset_reset="earliest")
    app.dataframe(source=source)
    rows = app.run(count=8, timeout=30, metadata=True)
    assert sorted(r["i"] for r in rows) == list(range(8))
    assert all(r["_headers"] == [("origin", b"remote")] for r in rows)
    assert app.topic_manager.all_topics[f"source__{source.name}"].config.num_partitions == 2


def test_custom_source_and_add_source_without_dataframe(new_app, read_topic):
    class Counter(Source):
        def run(self):
            for i in range(3):
                if not self.running:
                    break
                msg = self.serialize(key=f"c{i}".encode(), value={"n": i})
                self.produce(key=msg.key, value=msg.value)

    app, _ = new_app()
    topic = app.add_source(Counter(name=f"counter-{uuid.uuid4().hex[:6]}"))
    assert app.run(timeout=5) == []
    assert sorted(orjson.loads(m.value())["n"] for m in read_topic(topic.name, 3)) == [0, 1, 2]


def test_a_failing_sink_fails_the_checkpoint_and_commits_nothing(new_app, make_topic, produce, committed):
    class BrokenSink(BatchingSink):
        def write(self, batch):
            raise RuntimeError("destination is down")

    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(5)])
    app, group = new_app(commit_every=5)
    app.dataframe(app.topic(src)).sink(BrokenSink())
    with pytest.raises(RuntimeError, match="destination is down"):
        app.run(timeout=30)
    assert committed(group, src)[0] == -1001

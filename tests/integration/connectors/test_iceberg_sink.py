"""IcebergSink on the project's real Iceberg REST catalog and Kafka broker: kill -9 and restart
with no loss and no duplicate, backpressure while the catalog is down, bad input."""

from __future__ import annotations

import json
import shutil
import signal
import uuid
from typing import Any

import pytest
from connector_testkit import TS0, record, stop_program, wait_for_log

from infra.local.services import IcebergRest, free_port
from stream_edge.sinks.community.iceberg import (AWSIcebergConfig, IcebergCatalogUnreachableError, IcebergSink,
                                                 RESTIcebergConfig)

pytestmark = pytest.mark.integration

SINK = "test_iceberg_sink:rest_sink"  # connector_program.py imports it from this folder
RECORDS = 2000


def rest_sink(uri: str, table_name: str, **kwargs: Any) -> IcebergSink:
    """The sink the test program builds: a REST catalog, the table partitioned by day only
    (Quix's default also partitions by ``_key``: one file per key and batch)."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import DayTransform

    spec = PartitionSpec(PartitionField(1, 1000, DayTransform(), "day"))
    return IcebergSink(table_name, RESTIcebergConfig(uri), "rest", partition_spec=spec, **kwargs)


def load(uri: str, table_name: str) -> Any:
    from pyiceberg.catalog import load_catalog

    return load_catalog("rest", type="rest", uri=uri).load_table(table_name)


def rows(uri: str, table_name: str) -> list[dict[str, Any]]:
    return load(uri, table_name).scan().to_arrow().to_pylist()


@pytest.fixture(scope="module")
def rest_uri(services_env: dict[str, str]) -> str:
    return services_env["ICEBERG_REST_URI"]


def table() -> str:
    return f"edge_sink.t_{uuid.uuid4().hex[:10]}"


def test_kill9_mid_stream_then_restart_no_loss_no_duplicate(make_topic, produce, run_program, rest_uri):
    topic = make_topic(partitions=2, prefix="iceberg-kill9")
    produce(topic, RECORDS)
    name = table()
    spec = {"class": SINK, "kwargs": {"uri": rest_uri, "table_name": name}, "commit_every": 500}
    group = f"iceberg-kill9-{uuid.uuid4().hex[:8]}"
    crashed = run_program(topic, group, spec, crash_after=700)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    assert 0 < len(rows(rest_uri, name)) < RECORDS  # the killed checkpoint is in the table
    finished = run_program(topic, group, spec)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "already in the table; skipped" in finished.stderr  # the replay was recognised
    got = rows(rest_uri, name)
    assert sorted(r["id"] for r in got) == list(range(RECORDS))  # every record exactly once
    by_id = {r["id"]: r for r in got}
    assert by_id[7]["_key"] == "k7" and by_id[7]["reading"] == record(7)["reading"]
    assert by_id[7]["_timestamp"].timestamp() * 1000 == pytest.approx(TS0 + 7)
    summary = load(rest_uri, name).current_snapshot().summary.additional_properties
    assert {k for k in summary if k.startswith("stream-edge.kafka-offset.")} == {
        f"stream-edge.kafka-offset.{topic}.0", f"stream-edge.kafka-offset.{topic}.1"}


class PinnedIcebergRest(IcebergRest):
    """Restarts on its first port (the JVM binds it with SO_REUSEADDR despite TIME_WAIT sockets)."""

    def _port(self, key: str) -> int:
        return self._saved_port(key) or super()._port(key)


@pytest.fixture()
def private_catalog():
    """An Iceberg REST catalog server of this test alone (stopped and restarted by the test)."""
    server = PinnedIcebergRest()
    server.name = f"iceberg-bp-{uuid.uuid4().hex[:6]}"
    server.start()
    yield server
    server.stop()
    shutil.rmtree(server.home, ignore_errors=True)


def test_catalog_down_is_backpressure_then_everything_lands(make_topic, produce, run_program, private_catalog,
                                                            tmp_path):
    uri = private_catalog.uri()
    name = table()
    topic = make_topic(partitions=1, prefix="iceberg-bp")
    spec = {"class": SINK, "kwargs": {"uri": uri, "table_name": name, "backpressure_retry_seconds": 0.5},
            "idle_timeout": 20}
    proc = run_program(topic, f"iceberg-bp-{uuid.uuid4().hex[:8]}", spec, background=True, log_dir=tmp_path)
    try:
        wait_for_log(proc, "processing topics")  # the table exists (setup) before this line
        private_catalog.stop()  # connection refused from now on
        produce(topic, 300)
        wait_for_log(proc, "Iceberg refused the write")
        private_catalog.start()  # same port, same catalog database
        assert proc.wait(timeout=240) == 0, proc.log_path.read_text()
    finally:
        stop_program(proc)
    assert sorted(r["id"] for r in rows(uri, name)) == list(range(300))


def test_bad_field_stops_the_app_naming_record_and_field(make_topic, run_program, rest_uri, kafka_bootstrap):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="iceberg-bad")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"k{i}".encode(), value=json.dumps(record(i)).encode())
    bad = dict(record(4), reading="hot")  # a str in a double column
    producer.produce(topic, key=b"k4", value=json.dumps(bad).encode())
    producer.flush(30)
    name = table()
    spec = {"class": SINK, "kwargs": {"uri": rest_uri, "table_name": name}, "commit_every": 4}
    done = run_program(topic, f"iceberg-bad-{uuid.uuid4().hex[:8]}", spec)
    assert done.returncode != 0
    assert (f"cannot write field 'reading' of topic '{topic}' partition 0 offset 4: str 'hot' does not fit "
            f"column type double") in done.stderr
    assert sorted(r["id"] for r in rows(rest_uri, name)) == [0, 1, 2, 3]  # the earlier checkpoint landed


def test_config_checks_and_unreachable_glue(monkeypatch):
    with pytest.raises(ValueError, match="needs an AWSIcebergConfig"):
        IcebergSink("db.t", RESTIcebergConfig("http://127.0.0.1:1"), "aws_glue")
    with pytest.raises(ValueError, match="namespace.table"):
        IcebergSink("t", RESTIcebergConfig("http://127.0.0.1:1"), "rest")
    # AWS Glue where nothing answers (a closed local port stands for unreachable AWS)
    monkeypatch.setenv("AWS_ENDPOINT_URL_GLUE", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    sink = IcebergSink("db.t", AWSIcebergConfig("s3://bucket/warehouse", aws_region="us-east-1",
                                                aws_access_key_id="a", aws_secret_access_key="b"), "aws_glue")
    with pytest.raises(IcebergCatalogUnreachableError, match=r"Iceberg catalog \(aws_glue\) unreachable"):
        sink.setup()
    seen: list[Exception] = []
    IcebergSink("db.t", RESTIcebergConfig(f"http://127.0.0.1:{free_port()}"), "rest",
                on_client_connect_failure=seen.append).start()
    assert len(seen) == 1 and isinstance(seen[0], IcebergCatalogUnreachableError)


def _fill(sink: IcebergSink, topic: str, per_partition: int) -> None:
    for offset in range(per_partition):
        for partition in (0, 1):
            i = partition * per_partition + offset
            sink.add(record(i), f"k{i}".encode(), TS0 + i, [], topic, partition, offset)


def test_buffer_bound_appends_early_and_a_replay_adds_nothing(rest_uri):
    topic, name, per_partition = f"bound-{uuid.uuid4().hex[:6]}", table(), 5000
    sink = rest_sink(rest_uri, name, max_buffer_bytes=64 * 1024)
    sink.setup()
    _fill(sink, topic, per_partition)
    assert sink.early_appends > 0  # the bound was reached before any checkpoint
    assert sink.buffered_bytes < 64 * 1024 + 2 * 2048 * 512  # at most the newest, unconverted records on top
    early = {r["id"] for r in rows(rest_uri, name)}
    assert 0 < len(early) < 2 * per_partition
    sink.flush(topic, 0)  # one append for both partitions
    sink.flush(topic, 1)
    got = sorted(r["id"] for r in rows(rest_uri, name))
    assert got == list(range(2 * per_partition))
    # A restarted instance replays both partitions from the start: nothing is appended twice.
    again = rest_sink(rest_uri, name, max_buffer_bytes=64 * 1024)
    again.setup()
    _fill(again, topic, per_partition)
    again.flush()
    assert sorted(r["id"] for r in rows(rest_uri, name)) == got


def test_unbounded_sink_holds_everything_until_the_checkpoint(rest_uri):
    topic, name = f"nobound-{uuid.uuid4().hex[:6]}", table()
    sink = rest_sink(rest_uri, name, max_buffer_bytes=None)
    sink.setup()
    _fill(sink, topic, 3000)
    assert sink.early_appends == 0 and rows(rest_uri, name) == []
    sink.flush(topic, 1)
    assert sorted(r["id"] for r in rows(rest_uri, name)) == list(range(6000))
    snapshots = list(load(rest_uri, name).snapshots())
    assert len(snapshots) == 1  # both partitions in one snapshot, both offsets in its summary
    summary = snapshots[0].summary.additional_properties
    assert summary[f"stream-edge.kafka-offset.{topic}.0"] == "2999"
    assert summary[f"stream-edge.kafka-offset.{topic}.1"] == "2999"
    with pytest.raises(ValueError, match="max_buffer_bytes"):
        rest_sink(rest_uri, name, max_buffer_bytes=0)

"""KinesisSink on moto's Kinesis API (the project's S3/moto server) and the real Kafka broker."""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid
from collections import Counter
from typing import Any

import pytest
from connector_testkit import record, stop_program, wait_for_log

from infra.local.services import S3
from stream_edge.sinks.community.kinesis import KinesisSink, KinesisSinkException, KinesisStreamNotFoundError

pytestmark = pytest.mark.integration

SINK = "stream_edge.sinks.community.kinesis:KinesisSink"
RECORDS = 3000
CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}


def kinesis_client(endpoint: str) -> Any:
    import boto3

    return boto3.client("kinesis", endpoint_url=endpoint, **CREDENTIALS)


def create_stream(endpoint: str, shards: int = 2) -> str:
    name = f"edge-{uuid.uuid4().hex[:10]}"
    client = kinesis_client(endpoint)
    client.create_stream(StreamName=name, ShardCount=shards)
    client.get_waiter("stream_exists").wait(StreamName=name, WaiterConfig={"Delay": 0.2})
    return name


def read_stream(endpoint: str, stream: str) -> list[tuple[str, Any]]:
    """Every record of the stream as ``(partition key, decoded JSON)``."""
    client = kinesis_client(endpoint)
    out = []
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard["ShardId"],
                                             ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        while iterator:
            page = client.get_records(ShardIterator=iterator, Limit=10000)
            out.extend((r["PartitionKey"], json.loads(r["Data"])) for r in page["Records"])
            if not page["Records"]:
                break
            iterator = page.get("NextShardIterator")
    return out


@pytest.fixture(scope="module")
def endpoint(services_env: dict[str, str]) -> str:
    return services_env["S3_ENDPOINT"]


def sink_spec(endpoint: str, stream: str, **extra: Any) -> dict[str, Any]:
    return {"class": SINK, "kwargs": {"stream_name": stream, "aws_endpoint_url": endpoint, **CREDENTIALS, **extra}}


def test_kill9_mid_stream_then_restart_loses_nothing(make_topic, produce, run_program, endpoint):
    topic = make_topic(partitions=2, prefix="kinesis-kill9")
    produce(topic, RECORDS)
    stream = create_stream(endpoint)
    group = f"kinesis-kill9-{uuid.uuid4().hex[:8]}"
    crashed = run_program(topic, group, sink_spec(endpoint, stream), crash_after=1000)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    before = len(read_stream(endpoint, stream))
    assert 0 < before < RECORDS
    finished = run_program(topic, group, sink_spec(endpoint, stream))
    assert finished.returncode == 0, finished.stdout + finished.stderr
    got = read_stream(endpoint, stream)
    keys = Counter(key for key, _ in got)
    assert set(keys) == {f"k{i}" for i in range(RECORDS)}  # nothing lost
    # at-least-once: only the killed checkpoint (written, not committed) may come twice
    assert len(got) - RECORDS <= before
    assert {key: value for key, value in got} == {f"k{i}": record(i) for i in range(RECORDS)}


@pytest.fixture()
def private_moto():
    """A moto server of this test alone (frozen with SIGSTOP to stop answering)."""
    server = S3()
    server.name = f"moto-bp-{uuid.uuid4().hex[:6]}"
    server.start()
    yield server
    pid = server.pid()
    if pid is not None:
        os.kill(pid, signal.SIGCONT)
    server.stop()
    shutil.rmtree(server.home, ignore_errors=True)


def test_frozen_server_is_backpressure_then_everything_lands(make_topic, produce, run_program, private_moto,
                                                             tmp_path):
    endpoint = private_moto.endpoint()
    stream = create_stream(endpoint, shards=1)
    topic = make_topic(partitions=1, prefix="kinesis-bp")
    spec = sink_spec(endpoint, stream, max_put_attempts=1, backpressure_retry_seconds=0.5,
                     config={"connect_timeout": 1, "read_timeout": 1, "retries": {"max_attempts": 1}})
    spec["idle_timeout"] = 10
    proc = run_program(topic, f"kinesis-bp-{uuid.uuid4().hex[:8]}", spec, background=True, log_dir=tmp_path)
    pid = private_moto.pid()
    try:
        wait_for_log(proc, "processing topics")  # the sink found its stream (setup) before this line
        os.kill(pid, signal.SIGSTOP)  # accepts connections, never answers: every request times out
        produce(topic, 400)
        wait_for_log(proc, "Kinesis refused records")
        os.kill(pid, signal.SIGCONT)  # answering again: the paused partition is replayed
        assert proc.wait(timeout=180) == 0, proc.log_path.read_text()
    finally:
        os.kill(pid, signal.SIGCONT)
        stop_program(proc)
    got = read_stream(endpoint, stream)
    assert {key for key, _ in got} == {f"k{i}" for i in range(400)}


def test_bad_key_stops_the_app_naming_record_and_field(make_topic, run_program, endpoint, kafka_bootstrap):
    from confluent_kafka import Producer

    topic = make_topic(partitions=1, prefix="kinesis-bad")
    stream = create_stream(endpoint, shards=1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(4):
        producer.produce(topic, key=f"k{i}".encode(), value=json.dumps(record(i)).encode())
    producer.produce(topic, value=json.dumps(record(4)).encode())  # no key: no partition key
    producer.flush(30)
    done = run_program(topic, f"kinesis-bad-{uuid.uuid4().hex[:8]}", {**sink_spec(endpoint, stream),
                                                                      "commit_every": 4})
    assert done.returncode != 0
    assert f"cannot write the key of topic '{topic}' partition 0 offset 4" in done.stderr
    assert sorted(key for key, _ in read_stream(endpoint, stream)) == ["k0", "k1", "k2", "k3"]


def test_serializers_and_missing_stream(endpoint):
    stream = create_stream(endpoint, shards=1)
    sink = KinesisSink(stream, aws_endpoint_url=endpoint, **CREDENTIALS,
                       key_serializer=lambda key: f"sensor-{key}", value_serializer=lambda value: str(value["n"]))
    sink.setup()
    for offset in range(3):
        sink.add({"n": offset * 10}, offset, 0, [], "t", 1, offset)
    sink.flush("t", 1)
    client = kinesis_client(endpoint)
    shard = client.list_shards(StreamName=stream)["Shards"][0]["ShardId"]
    iterator = client.get_shard_iterator(StreamName=stream, ShardId=shard,
                                         ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    records = client.get_records(ShardIterator=iterator)["Records"]
    assert [(r["PartitionKey"], r["Data"]) for r in records] == [("sensor-0", b"0"), ("sensor-1", b"10"),
                                                                  ("sensor-2", b"20")]
    with pytest.raises(KinesisSinkException, match="the value of topic 't' partition 1 offset 9"):
        sink.add({"no-n": 1}, 1, 0, [], "t", 1, 9)
    sink.cleanup()
    with pytest.raises(KinesisStreamNotFoundError, match="does-not-exist"):
        KinesisSink("does-not-exist", aws_endpoint_url=endpoint, **CREDENTIALS).setup()

"""KinesisSource on moto's Kinesis API and the real Kafka broker: shard positions are committed to
the source's changelog topic and a SIGKILLed application resumes after them, losing nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_kinesis_sink import CREDENTIALS, create_stream, kinesis_client

from stream_edge.sources.community.kinesis import KinesisSource
from stream_edge.sources.community.kinesis.kinesis import KinesisStreamNotFoundError

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
RECORDS = 1200

# Kinesis stream -> KinesisSource -> OUTPUT topic. With CRASH_AFTER the program SIGKILLs itself
# (source process and application) right after the first commit of positions that follows at
# least CRASH_AFTER produced records: what was produced is delivered and its positions committed.
PROGRAM = '''
import os, signal, sys
from stream_edge import Application
from stream_edge.sources.community.kinesis import KinesisSource

bootstrap, endpoint, stream, output, group, crash_after = sys.argv[1:7]
crash_after = int(crash_after)


class CrashingKinesisSource(KinesisSource):
    produced = 0

    def produce(self, *args, **kwargs):
        super().produce(*args, **kwargs)
        self.produced += 1

    def flush(self, timeout=None):
        super().flush(timeout)
        if crash_after and self.produced >= crash_after:
            print(f"CRASHING after {self.produced} records", flush=True)
            os.kill(os.getppid(), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    source = CrashingKinesisSource(stream, aws_region="us-east-1", aws_access_key_id="testing",
                                   aws_secret_access_key="testing", aws_endpoint_url=endpoint,
                                   auto_offset_reset="earliest", max_records_per_shard=10, commit_interval=0)
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest")
    app.add_source(source, topic=app.topic(output, key_serializer="str", value_serializer="bytes"))
    app.run()
'''


def put_records(endpoint: str, stream: str, start: int, n: int) -> None:
    client = kinesis_client(endpoint)
    for first in range(start, start + n, 500):
        chunk = [{"PartitionKey": f"pk{i}", "Data": json.dumps({"i": i}).encode()}
                 for i in range(first, min(first + 500, start + n))]
        assert client.put_records(StreamName=stream, Records=chunk)["FailedRecordCount"] == 0


def read_topic(bootstrap: str, topic: str, expected: int, timeout: float = 120) -> list[tuple[str, int]]:
    """``(key, i)`` of every message until ``expected`` distinct records arrived (or ``timeout``)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out: list[tuple[str, int]] = []
    import time

    deadline = time.monotonic() + timeout
    try:
        while len(set(out)) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                if msg.error() is None:
                    out.append((msg.key().decode(), json.loads(msg.value())["i"]))
        # anything a replay might add behind the last expected record
        for msg in consumer.consume(500, 2.0):
            if msg.error() is None:
                out.append((msg.key().decode(), json.loads(msg.value())["i"]))
    finally:
        consumer.close()
    return out


@pytest.fixture(scope="module")
def endpoint(services_env: dict[str, str]) -> str:
    return services_env["S3_ENDPOINT"]


def start(tmp_path: Path, args: list[str]) -> Any:
    script = tmp_path / "kinesis_source_program.py"
    script.write_text(PROGRAM)
    log = open(tmp_path / f"program-{uuid.uuid4().hex[:6]}.log", "w")
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=tmp_path)
    proc.log_path = Path(log.name)  # type: ignore[attr-defined]
    return proc


def test_kill9_then_resume_from_committed_shard_positions(make_topic, kafka_bootstrap, endpoint, tmp_path):
    stream = create_stream(endpoint, shards=2)
    put_records(endpoint, stream, 0, RECORDS)
    output = make_topic(partitions=1, prefix="kinesis-src")
    group = f"kinesis-src-{uuid.uuid4().hex[:8]}"
    args = [kafka_bootstrap, endpoint, stream, output, group]
    crashed = start(tmp_path, args + ["400"])
    assert crashed.wait(timeout=120) == -signal.SIGKILL, crashed.log_path.read_text()
    assert "CRASHING after" in crashed.log_path.read_text()
    first = read_topic(kafka_bootstrap, output, RECORDS, timeout=5)
    assert 400 <= len(first) < RECORDS
    put_records(endpoint, stream, RECORDS, 100)  # more records arrive while the app is down
    resumed = start(tmp_path, args + ["0"])
    try:
        got = read_topic(kafka_bootstrap, output, RECORDS + 100)
    finally:
        resumed.send_signal(signal.SIGTERM)
        assert resumed.wait(timeout=60) == 0, resumed.log_path.read_text()
    assert sorted(i for _, i in got) == list(range(RECORDS + 100))  # nothing lost, nothing twice
    assert all(key == f"pk{i}" for key, i in got)


def test_default_topic_latest_and_missing_stream(endpoint):
    source = KinesisSource("readings", aws_region="us-east-1", aws_endpoint_url=endpoint,
                           aws_access_key_id="testing", aws_secret_access_key="testing")
    topic = source.default_topic()
    assert (source.name, topic.name) == ("kinesis_readings", "kinesis_readings")
    assert topic.serialize(key="pk", value=b"\x00raw").value == b"\x00raw"  # the data as it is
    with pytest.raises(ValueError, match="auto_offset_reset"):
        KinesisSource("readings", auto_offset_reset="middle")  # type: ignore[arg-type]
    with pytest.raises(KinesisStreamNotFoundError, match="no-such-stream"):
        KinesisSource("no-such-stream", aws_region="us-east-1", aws_endpoint_url=endpoint,
                      **{k: v for k, v in CREDENTIALS.items() if k != "region_name"}).setup()

"""``stream-edge run`` on the real broker: a user pipeline runs, /metrics counts what it processed,
/readyz says ready, SIGTERM ends it after a final checkpoint; ``check`` names bad settings."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
COMMAND = str(Path(sys.executable).with_name("stream-edge"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(name) and not line.startswith("#"))


def env_for(kafka_bootstrap: str, source: str, output: str, tmp_path: Path) -> dict:
    import os

    return dict(os.environ, Quix__Broker__Address=kafka_bootstrap, EDGE_TEST_INPUT=source, EDGE_TEST_OUTPUT=output,
                PYTHONPATH=str(HERE), STREAM_EDGE_STATE_DIR=str(tmp_path / "state"),
                STREAM_EDGE_CONSUMER_GROUP=f"svc-{uuid.uuid4().hex[:8]}")


def test_run_serves_metrics_and_readiness_and_stops_on_sigterm(kafka_bootstrap, make_topic, tmp_path):
    source, output = make_topic(partitions=2, prefix="svc-in"), make_topic(prefix="svc-out")
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for i in range(200):
        producer.produce(source, json.dumps({"n": i}).encode(), f"k{i % 7}".encode())
    assert producer.flush(30) == 0
    port = free_port()
    env = env_for(kafka_bootstrap, source, output, tmp_path)
    env.update(AWS_SECRET_ACCESS_KEY="edge-secret-key-0042", STREAM_EDGE_LOG_FORMAT="json",
               EDGE_TEST_LAKE=(tmp_path / "lake").as_uri())
    proc = subprocess.Popen([COMMAND, "run", "edge_pipeline:build", "--metrics-port", str(port),
                             "--set", "auto_offset_reset=earliest", "--set", "commit_interval=0.5",
                             "--set", "log_summary_interval=1"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline, text = time.monotonic() + 60, ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"stream-edge exited early ({proc.returncode}):\n{proc.stdout.read()}")
            try:
                status, text = get(f"http://127.0.0.1:{port}/metrics")
            except OSError:
                time.sleep(0.3)
                continue
            # Produced counts come from librdkafka's statistics (every 5 s); the 7 keys fall silent
            # 1 s after their last record.
            if metric(text, "stream_edge_messages_consumed_total") >= 200 and \
                    metric(text, "stream_edge_messages_produced_total") >= 200 and \
                    metric(text, "stream_edge_silence_events_total") >= 7:
                break
            time.sleep(0.3)
        assert metric(text, "stream_edge_messages_consumed_total") == 200
        assert f'stream_edge_messages_consumed_total{{topic="{source}"}} 200.0' in text
        assert metric(text, "stream_edge_assigned_partitions") == 2
        assert f'stream_edge_messages_produced_total{{topic="{output}"}} 200.0' in text
        assert metric(text, "stream_edge_checkpoints_total") >= 1
        assert metric(text, "stream_edge_lake_rows_written_total") == 200
        assert metric(text, "stream_edge_lake_files_written_total") >= 1
        lake_bytes = sum(f.stat().st_size for f in (tmp_path / "lake").rglob("*.parquet"))
        assert metric(text, "stream_edge_lake_bytes_written_total") == lake_bytes
        assert metric(text, "stream_edge_silence_events_total") == 7  # each silent key once
        status, body = get(f"http://127.0.0.1:{port}/healthz")
        assert status == 200 and json.loads(body)["live"] is True
        status, body = get(f"http://127.0.0.1:{port}/readyz")
        assert status == 200 and json.loads(body)["assigned_partitions"] == 2
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    log = proc.stdout.read()
    assert "received SIGTERM: stopping after a final checkpoint" in log
    summaries = [r["message"] for r in (json.loads(line) for line in log.splitlines() if line.startswith("{"))
                 if r["message"].startswith(("summary:", "final summary:"))]
    assert summaries and summaries[-1].startswith("final summary:")
    assert sum(int(m.split(" messages")[0].split()[-1].replace(",", "")) for m in summaries) == 200
    assert "edge-secret-key-0042" not in log and "using key ***" in log  # secrets never reach the logs
    records = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert records and all({"ts", "level", "logger", "message"} <= set(r) for r in records)
    consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": env["STREAM_EDGE_CONSUMER_GROUP"]})
    committed = consumer.committed([TopicPartition(source, p) for p in (0, 1)], timeout=10)
    consumer.close()
    assert sum(tp.offset for tp in committed) == 200  # the final checkpoint committed everything


def test_check_validates_without_connecting_and_names_the_bad_setting(tmp_path):
    env = env_for("127.0.0.1:1", "in", "out", tmp_path)  # nothing listens there: check must not connect
    ok = subprocess.run([COMMAND, "check", "edge_pipeline:build"], env=env, capture_output=True, text=True,
                        timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "input topics ['in']" in ok.stdout and "environment Quix__Broker__Address" in ok.stdout
    config = tmp_path / "edge.toml"
    config.write_text('[stream_edge]\ncommit_interval = "soon"\n')
    bad = subprocess.run([COMMAND, "check", "edge_pipeline:build", "--config", str(config)], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert f"commit_interval='soon' (from config file {config}) is invalid" in bad.stderr
    flag = subprocess.run([COMMAND, "check", "edge_pipeline:build", "--config", str(config),
                           "--set", "commit_interval=2"], env=env, capture_output=True, text=True, timeout=60)
    assert flag.returncode == 0, flag.stderr  # flags override the config file
    missing = subprocess.run([COMMAND, "check", "edge_pipeline:nothing"], env=env, capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and "has no function 'nothing'" in missing.stderr

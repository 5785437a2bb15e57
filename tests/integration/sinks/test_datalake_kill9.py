"""kill -9 at every point of the lake commit protocol, then a restart: every record exactly once.

Real broker, real consumer group offsets, real files; the worker process SIGKILLs itself at:
before-stage (before upload), after-stage (uploaded, not committed), after-commit-record
(committed, not yet visible), after-publish (lake commit done, Kafka commit not done).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.integration

WORKER = Path(__file__).with_name("datalake_kafka_worker.py")
REPO = Path(__file__).resolve().parents[3]
RECORDS = 1200
TS = int(time.time() * 1000)


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(RECORDS):
        sensor = ["s-1", "a/b", "=", None][i % 4]
        value = {"id": i, "sensor": sensor, "ts_ms": TS + i * 1000, "reading": i * 0.5}
        producer.produce(topic, key=f"k{i % 7}".encode(), value=json.dumps(value).encode())
    assert producer.flush(30) == 0


def run_worker(args: list[str], timeout: float = 180) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, str(WORKER), *args], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def lake_ids(root: Path) -> list[int]:
    visible = [str(p) for p in root.rglob("*.parquet")
               if not any(part.startswith(("_", ".")) for part in p.relative_to(root).parts)]
    if not visible:
        return []
    table = ds.dataset(visible, format="parquet").to_table(columns=["id"])
    return table.column("id").to_pylist()


@pytest.mark.parametrize("point", ["before-stage", "after-stage", "after-commit-record", "after-publish"])
def test_kill9_then_restart_writes_every_record_exactly_once(kafka_bootstrap, make_topic, tmp_path, point):
    topic = make_topic(partitions=2, prefix="lake-kill9")
    produce(kafka_bootstrap, topic)
    group = f"lake-kill9-{uuid.uuid4().hex[:8]}"
    lake = tmp_path / "lake"
    args = [kafka_bootstrap, topic, group, lake.as_uri()]
    crashed = run_worker(args + [point, "3"])
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    assert f"CRASHING at {point}" in crashed.stdout
    before = lake_ids(lake / "events")
    assert len(before) == len(set(before))  # no duplicates even mid-crash
    finished = run_worker(args)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ids = lake_ids(lake / "events")
    assert len(ids) == RECORDS, f"{len(ids)} rows for {RECORDS} records"
    assert sorted(ids) == list(range(RECORDS))
    staged = [p for p in (lake / "events" / "_tmp").rglob("*") if p.is_file()] if (lake / "events" / "_tmp").exists() else []
    assert staged == []


def test_kill9_twice_in_a_row(kafka_bootstrap, make_topic, tmp_path):
    topic = make_topic(partitions=2, prefix="lake-kill9")
    produce(kafka_bootstrap, topic)
    group = f"lake-kill9-{uuid.uuid4().hex[:8]}"
    args = [kafka_bootstrap, topic, group, (tmp_path / "lake").as_uri()]
    assert run_worker(args + ["after-publish", "2"]).returncode == -signal.SIGKILL
    assert run_worker(args + ["after-commit-record", "2"]).returncode == -signal.SIGKILL
    assert run_worker(args).returncode == 0
    assert sorted(lake_ids(tmp_path / "lake" / "events")) == list(range(RECORDS))


APP_PROGRAM = Path(__file__).with_name("datalake_app_program.py")


@pytest.mark.e2e
@pytest.mark.parametrize("point", ["before-stage", "after-stage", "after-commit-record", "after-publish"])
def test_kill9_through_the_application(kafka_bootstrap, make_topic, tmp_path, point):
    """The same crash points with the runtime's Application driving the checkpoints."""
    topic = make_topic(partitions=2, prefix="lake-app-kill9")
    produce(kafka_bootstrap, topic)
    group = f"lake-app-kill9-{uuid.uuid4().hex[:8]}"
    args = [kafka_bootstrap, topic, group, (tmp_path / "lake").as_uri()]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    crashed = subprocess.run([sys.executable, str(APP_PROGRAM), *args, point, "3"], capture_output=True,
                             text=True, timeout=180, env=env, cwd=REPO)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    finished = subprocess.run([sys.executable, str(APP_PROGRAM), *args], capture_output=True, text=True,
                              timeout=180, env=env, cwd=REPO)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ids = lake_ids(tmp_path / "lake" / "edge" / "events")
    assert len(ids) == RECORDS and sorted(ids) == list(range(RECORDS))


@pytest.mark.parametrize("point", ["after-stage", "after-commit-record"])
def test_kill9_on_s3(kafka_bootstrap, make_topic, s3_bucket, s3_client, point):
    """The same protocol on the local S3 server, where a move is a copy plus a delete."""
    import io

    import pyarrow.parquet as pq

    topic = make_topic(partitions=2, prefix="lake-kill9-s3")
    produce(kafka_bootstrap, topic)
    group = f"lake-kill9-s3-{uuid.uuid4().hex[:8]}"
    args = [kafka_bootstrap, topic, group, f"s3://{s3_bucket}"]
    crashed = run_worker(args + [point, "3"])
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    finished = run_worker(args)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ids = []
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=s3_bucket, Prefix="events/"):
        for obj in page.get("Contents", []):
            key = obj["Key"]
            if key.endswith(".parquet") and not any(p.startswith(("_", ".")) for p in key.split("/")[1:]):
                body = s3_client.get_object(Bucket=s3_bucket, Key=key)["Body"].read()
                ids.extend(pq.read_table(io.BytesIO(body), columns=["id"]).column("id").to_pylist())
    assert len(ids) == RECORDS and sorted(ids) == list(range(RECORDS))

"""A keyed topic with tombstones, its edge SIGKILLed mid-run and restarted, then ``register`` and
``upsert``: the keyed table equals the replay of the topic (real broker, real files, catalog, Spark).

The edge is the data-lake sink with ``include_kafka_metadata=True`` driven by the kill -9 tests'
worker (``tests/integration/sinks/datalake_kafka_worker.py``: the runtime's checkpoint order,
SIGKILLed at a point of the lake's commit protocol)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from test_upsert import QUIET, replay, same, table_state

from lakehouse.register import RegisterOptions, run_register
from lakehouse.upsert import UpsertOptions, run_upsert

pytestmark = [pytest.mark.integration, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[3]
WORKER = REPO / "tests" / "integration" / "sinks" / "datalake_kafka_worker.py"
KEYS = 40


def produce_changes(bootstrap: str, topic: str, count: int) -> list[tuple[int, int, bytes, dict | None]]:
    """(partition, offset, key, value) as produced: a key always goes to one partition, one in five
    changes is a tombstone."""
    rng = random.Random(11)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    offsets = [0, 0]
    changes = []
    now = int(time.time() * 1000)
    for i in range(count):
        number = rng.randrange(KEYS)
        key, partition = f"dev-{number}".encode(), number % 2
        value = None if rng.random() < 0.2 else {"sensor": f"s-{number % 3}", "ts_ms": now + i, "level": i}
        producer.produce(topic, key=key, partition=partition, value=None if value is None else json.dumps(value).encode())
        changes.append((partition, offsets[partition], key, value))
        offsets[partition] += 1
    assert producer.flush(30) == 0
    return changes


def run_edge(args: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, str(WORKER), *args], capture_output=True, text=True, timeout=180,
                          env=env, cwd=REPO)


def test_edge_killed_mid_run_then_restarted_register_and_upsert(spark, kafka_bootstrap, make_topic, tmp_path):
    """SIGKILLed after a lake commit was recorded but before it was visible, upserted from the
    partial lake, SIGKILLed again after a lake commit and before the Kafka commit (the restart
    reads those records again), then run to the end: the table equals the replay, every
    tombstone applied once."""
    topic = make_topic(partitions=2, prefix="ups-kill9")
    changes = produce_changes(kafka_bootstrap, topic, 600)
    lake = tmp_path / "lake"
    args = [kafka_bootstrap, topic, f"ups-kill9-{uuid.uuid4().hex[:8]}", lake.as_uri()]
    namespace = f"ups_{uuid.uuid4().hex[:8]}"
    source, table = f"rest.{namespace}.events_changelog", f"rest.{namespace}.devices"

    def register_and_upsert() -> object:
        run_register(spark, RegisterOptions(source=(lake / "events").as_uri(), table=source))
        return run_upsert(spark, UpsertOptions(source=source, table=table), **QUIET)

    crashed = run_edge(args + ["after-commit-record", "3"])
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    first = register_and_upsert()
    assert 0 < first.changes_read < len(changes), first.summary_line()
    crashed = run_edge(args + ["after-publish", "2"])
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    finished = run_edge(args)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    last = register_and_upsert()
    assert first.changes_read + last.changes_read == len(changes), last.summary_line()
    assert same(table_state(spark, table), replay(changes)), last.summary_line()
    assert spark.table(source).where("_kafka_tombstone").count() == sum(1 for c in changes if c[3] is None)
    for name in (table, source):
        spark.sql(f"DROP TABLE IF EXISTS {name}")

"""The peers of bench/lake_ingest.py start from the project's own code and land rows in the
project's Iceberg REST catalog: Kafka Connect with Apache Iceberg's sink connector, and a Spark
Structured Streaming job. Small N: each test proves the peer lands every row once, with its values,
in the bench's common table (year/month/day/hour of the event time, identity-partitioned).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pyiceberg.catalog import load_catalog

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "bench"))

from lake_ingest_data import produce, reading  # noqa: E402
from lake_ingest_visible import create_lake_table  # noqa: E402

from infra.local.kafka_connect_service import KafkaConnect, iceberg_sink_config, rest  # noqa: E402

pytestmark = pytest.mark.integration

N = 300
PARTITIONS = 3


def expected_rows() -> list[dict]:
    """The readings with the Hive columns of their event time (2026-01-05, hours 0..5 UTC)."""
    rows = sorted((json.loads(reading(i, N)[2]) for i in range(N)), key=lambda r: r["id"])
    for row in rows:
        row.update(year=2026, month=1, day=5, hour=(row["ts_ms"] - 1_767_571_200_000) // 3_600_000)
    return rows


def fill(bootstrap: str, topic: str) -> None:
    produce(bootstrap, topic, ((p % PARTITIONS, k, v) for p, k, v in (reading(i, N) for i in range(N))))


def table_rows(catalog, name: str, columns: list[str]) -> list[dict]:
    table = catalog.load_table(name)
    if table.current_snapshot() is None:
        return []
    return sorted(table.scan(selected_fields=tuple(columns)).to_arrow().to_pylist(), key=lambda r: r["id"])


def test_kafka_connect_iceberg_sink_lands_every_row_once(ensure_services, services_env, make_topic, unique_name):
    env = ensure_services("kafka-connect")
    url = KafkaConnect().url
    topic = make_topic(PARTITIONS, prefix="peer-kc")
    control = make_topic(1, prefix="peer-kc-control")
    fill(env["KAFKA_BOOTSTRAP"], topic)
    catalog = load_catalog("peers", type="rest", uri=services_env["ICEBERG_REST_URI"])
    namespace, name = "peers", unique_name("kc")
    create_lake_table(catalog, f"{namespace}.{name}")
    connector = f"peer-{name}"
    # Hardened as the bench runs it; the Hive columns come from the message timestamps (event times).
    rest(f"{url}/connectors/{connector}/config", "PUT",
         iceberg_sink_config(topic, f"{namespace}.{name}", services_env["ICEBERG_REST_URI"], control,
                             tasks=PARTITIONS, commit_interval_ms=1000, hive_columns=True))
    columns = ["id", "sensor", "ts_ms", "temp", "hum", "year", "month", "day", "hour"]
    try:
        deadline = time.monotonic() + 180  # a safety net, not a speed check
        rows: list[dict] = []
        while time.monotonic() < deadline and len(rows) < N:
            time.sleep(1)
            rows = table_rows(catalog, f"{namespace}.{name}", columns)
        assert rows == expected_rows()
        status = rest(f"{url}/connectors/{connector}/status")
        assert [t["state"] for t in status["tasks"]] == ["RUNNING"] * PARTITIONS
        assert {tuple(f.file.partition) for f in catalog.load_table(f"{namespace}.{name}").scan().plan_files()} == {
            (2026, 1, 5, hour) for hour in range(6)}  # one partition per hour of event time
    finally:
        rest(f"{url}/connectors/{connector}", "DELETE")


def test_spark_structured_streaming_lands_every_row_once(services_env, make_topic, unique_name, tmp_path):
    topic = make_topic(PARTITIONS, prefix="peer-ss")
    fill(services_env["KAFKA_BOOTSTRAP"], topic)
    table = f"peers.{unique_name('ss')}"
    env = dict(os.environ, **services_env, LAKEHOUSE_LOCAL_DIR=str(tmp_path / "lakehouse"))
    proc = subprocess.run(
        [sys.executable, "-m", "infra.local.spark_kafka_ingest", "--topic", topic, "--table", table,
         "--checkpoint", str(tmp_path / "checkpoint")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert set(json.loads(proc.stdout.strip().splitlines()[-1])) == {"started_ms", "done_ms"}
    catalog = load_catalog("peers", type="rest", uri=services_env["ICEBERG_REST_URI"])
    rows = table_rows(catalog, table, ["id", "sensor", "ts_ms", "temp", "hum", "year", "month", "day", "hour"])
    assert rows == expected_rows()

"""The windows job on real Spark, Iceberg and Delta, and its parity with the real edge on Kafka:
the batch recompute produces exactly the rows the edge's ``final()`` emitted."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Consumer, Producer
from pyspark.sql import functions as F

from lakehouse.register import RegisterOptions, run_register
from lh_testkit import REPO
from pipelines.cli import main
from lakehouse.windows import WindowRecomputeOptions, WindowSpec, run_window_recompute
from stream_edge.dataframe.windows.replay import replay

pytestmark = pytest.mark.integration

BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def kafka_like_rows(n: int, keys: int = 4, partitions: int = 2, seed: int = 7) -> list[tuple]:
    """(key, ts, partition, offset, temp) rows as the sink's metadata columns hold them: a key
    always lands on one partition; timestamps mostly rise, with late and out-of-order ones."""
    rng = random.Random(seed)
    offsets = [0] * partitions
    rows = []
    for i in range(n):
        key = f"sensor-{rng.randrange(keys)}"
        partition = int(key[-1]) % partitions
        ts = BASE + i * 40 + rng.choice([0, 0, 0, -300, -1500, 120])
        rows.append((key.encode(), ts, partition, offsets[partition], round(rng.uniform(-5, 35), 2)))
        offsets[partition] += 1
    return rows


def expected_windows(rows: list[tuple], spec: WindowSpec) -> list[tuple]:
    """What the edge emits: each Kafka partition in offset order through the edge's engines."""
    result = []
    for partition in sorted({r[2] for r in rows}):
        ordered = sorted((r for r in rows if r[2] == partition), key=lambda r: r[3])
        result += [(w["key"], w["start"], w["end"], w["value"]) for w in replay(
            [(r[0], r[1], r[4]) for r in ordered], kind=spec.kind, duration_ms=spec.duration_ms,
            grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation,
            closing_strategy=spec.closing)]
    return sorted(result)


def output_rows(spark, table: str) -> list[tuple]:
    return sorted((bytes(r.key), r.window_start, r.window_end, r.value) for r in spark.table(table).collect())


@pytest.fixture(scope="module")
def raw_table(spark):
    """An Iceberg table (embedded catalog) with the sink's metadata columns, rows shuffled."""
    rows = kafka_like_rows(1200)
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    namespace = f"embedded.win_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {namespace}")
    df = spark.createDataFrame(shuffled, "_kafka_key binary, _kafka_timestamp bigint, _kafka_partition int, "
                                         "_kafka_offset bigint, temp double")
    df = df.withColumn("event_time", F.timestamp_millis("_kafka_timestamp"))  # the same instant as a timestamp
    df.writeTo(f"{namespace}.raw").using("iceberg").create()
    yield f"{namespace}.raw", rows, namespace
    spark.sql(f"DROP TABLE IF EXISTS {namespace}.raw")


@pytest.mark.parametrize("spec", [
    WindowSpec.parse("tumbling", "1s", grace="200ms", aggregation="mean"),
    WindowSpec.parse("hopping", "2s", step="500ms", aggregation="max", closing="partition"),
    WindowSpec.parse("sliding", "1s", aggregation="count"),
], ids=["tumbling-mean-key", "hopping-max-partition", "sliding-count"])
def test_recompute_equals_the_edge_engines(spark, raw_table, spec):
    table, rows, namespace = raw_table
    output = f"{namespace}.out_{spec.kind}"
    report = run_window_recompute(spark, WindowRecomputeOptions(
        table=table, output=output, value_column="temp", window=spec))
    expected = expected_windows(rows, spec)
    assert len(expected) > 50
    assert output_rows(spark, output) == expected
    assert (report.rows_read, report.windows) == (len(rows), len(expected))
    assert f"-> {len(expected)} windows" in report.summary_line()


def test_timestamp_typed_event_time_gives_the_same_windows(spark, raw_table):
    table, rows, namespace = raw_table
    spec = WindowSpec.parse("tumbling", "1s", grace="200ms", aggregation="mean")
    run_window_recompute(spark, WindowRecomputeOptions(table=table, output=f"{namespace}.by_event_time",
                                                       value_column="temp", timestamp_column="event_time", window=spec))
    assert output_rows(spark, f"{namespace}.by_event_time") == expected_windows(rows, spec)


@pytest.mark.parametrize("output_format", ["iceberg", "delta"])
def test_rerun_replaces_the_result(spark, raw_table, tmp_path, output_format):
    table, rows, namespace = raw_table
    target = f"delta.`{tmp_path / 'windows'}`" if output_format == "delta" else f"{namespace}.rerun"
    spec = WindowSpec.parse("tumbling", "2s", aggregation="sum")
    for where in ("_kafka_partition = 0", "_kafka_partition = 1"):
        run_window_recompute(spark, WindowRecomputeOptions(table=table, output=target, value_column="temp",
                                                           window=spec, where=where))
    expected = expected_windows([r for r in rows if r[2] == 1], spec)
    assert output_rows(spark, target) == expected  # the second run replaced the first one's rows


def test_spark_submit_and_lakehouse_command_run_the_same_windows_job(spark, raw_table, spark_local_dir, capsys,
                                                                     monkeypatch):
    table, rows, namespace = raw_table
    env = dict(os.environ, LAKEHOUSE_CATALOG="embedded", ICEBERG_REST_URI="", LAKEHOUSE_LOCAL_DIR=str(spark_local_dir),
               ICEBERG_WAREHOUSE=(spark_local_dir / "embedded-warehouse").as_uri(),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    args = ["--table", table, "--output", f"{namespace}.by_submit", "--duration", "2s", "--aggregation", "min",
            "--value-column", "temp", "--embedded-catalog"]
    proc = subprocess.run([str(Path(sys.executable).with_name("spark-submit")), "pipelines/jobs/windows.py", *args],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = expected_windows(rows, WindowSpec.parse("tumbling", "2s", aggregation="min"))
    assert proc.stdout.strip().splitlines()[-1].startswith(
        f"windows {table} -> {namespace}.by_submit: tumbling 2000 ms, grace 0 ms, min, closing per key; "
        f"{len(rows)} rows in 4 groups -> {len(expected)} windows in ")

    for key in ("LAKEHOUSE_CATALOG", "ICEBERG_REST_URI", "ICEBERG_WAREHOUSE"):
        monkeypatch.setenv(key, env[key])
    args[3] = f"{namespace}.by_command"
    assert main(["windows", *args]) == 0
    assert f"-> {len(expected)} windows" in capsys.readouterr().out
    assert output_rows(spark, f"{namespace}.by_submit") == output_rows(spark, f"{namespace}.by_command") == expected


def test_missing_columns_are_named(spark, raw_table):
    table, _, namespace = raw_table
    spec = WindowSpec.parse("tumbling", "1s")
    with pytest.raises(ValueError, match=r"no column\(s\) ts_ms; it has: _kafka_key, _kafka_timestamp"):
        run_window_recompute(spark, WindowRecomputeOptions(
            table=table, output=f"{namespace}.never", value_column="temp", timestamp_column="ts_ms", window=spec))
    with pytest.raises(ValueError, match=r"no column\(s\) _kafka_seq \(write the lake with "
                                         r"DataLakeSink\(include_kafka_metadata=True\)"):
        run_window_recompute(spark, WindowRecomputeOptions(
            table=table, output=f"{namespace}.never", value_column="temp", window=spec,
            order_by=("_kafka_partition", "_kafka_seq")))


def test_parity_with_the_edge_on_kafka(spark, kafka_bootstrap, make_topic, tmp_path):
    """The edge computes 1 s tumbling means per sensor and sinks the raw records to the lake;
    register + the windows job on the lake give exactly the edge's output, late records included."""
    from stream_edge import Application
    from stream_edge.sinks.core.datalake import DataLakeSink

    source, results = make_topic(partitions=2, prefix="win-src"), make_topic(prefix="win-out")
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})
    rows = kafka_like_rows(3000, keys=6, seed=11)
    for key, ts, partition, _offset, temp in rows:
        producer.produce(source, orjson.dumps({"temp": temp, "ts_ms": ts}), key, partition=partition, timestamp=ts)
    assert producer.flush(30) == 0

    def edge_app():
        return Application(kafka_bootstrap, consumer_group=f"g-{uuid.uuid4().hex[:8]}", auto_offset_reset="earliest",
                           loglevel=None, state_dir=tmp_path / f"state-{uuid.uuid4().hex[:6]}")

    windows_app = edge_app()
    sdf = windows_app.dataframe(windows_app.topic(source))
    sdf = sdf.apply(lambda value: value["temp"]).tumbling_window(timedelta(seconds=1), grace_ms=250).mean().final()
    sdf.to_topic(windows_app.topic(results))
    windows_app.run(timeout=5, collect=False)

    lake_app = edge_app()
    lake_app.dataframe(lake_app.topic(source)).sink(DataLakeSink(
        "readings", storage_url=(tmp_path / "lake").as_uri(), hive_columns=["hour"], timestamp_column="ts_ms",
        include_kafka_metadata=True))
    lake_app.run(timeout=5, collect=False)

    namespace = f"embedded.parity_{uuid.uuid4().hex[:8]}"
    run_register(spark, RegisterOptions(source=(tmp_path / "lake" / "readings").as_uri(), table=f"{namespace}.readings"))
    spec = WindowSpec.parse("tumbling", "1s", grace="250ms", aggregation="mean")
    run_window_recompute(spark, WindowRecomputeOptions(
        table=f"{namespace}.readings", output=f"{namespace}.temp_1s", value_column="temp", window=spec))

    edge_rows = sorted((m.key(), v["start"], v["end"], v["value"])
                       for m in read_all(kafka_bootstrap, results) for v in [orjson.loads(m.value())])
    assert len(edge_rows) > 100
    assert edge_rows == expected_windows(rows, spec)  # the edge itself follows the contract
    assert output_rows(spark, f"{namespace}.temp_1s") == edge_rows


def read_all(bootstrap: str, topic: str, idle: float = 3.0) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    out, last = [], time.monotonic()
    try:
        while time.monotonic() - last < idle:
            batch = [m for m in consumer.consume(1000, 0.5) if m.error() is None]
            if batch:
                out += batch
                last = time.monotonic()
    finally:
        consumer.close()
    return out

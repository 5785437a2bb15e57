"""The quick-start demo: the whole path from Kafka to a queryable table on one laptop.

Run it with ``./dev demo`` (it sets up everything it needs). Steps, each printed as it runs:

1. start the local services (Kafka, Iceberg REST catalog, S3) unless they already run;
2. produce synthetic sensor readings to a Kafka topic;
3. consume them and write Hive-partitioned Parquet into a local lake folder;
4. read the lake back with Spark and print an aggregate per sensor.

Options: ``--records N`` (default 2,000), ``--lake DIR`` (default ``.local/demo-lake``),
``--keep-services`` to leave the services running afterwards (default: stop what the demo started).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import time
import uuid
from pathlib import Path

from infra.local import services

SENSORS = ["sensor-a", "sensor-b", "sensor-c", "sensor-d"]


def _step(message: str) -> None:
    print(f"[demo] {message}", flush=True)


def produce_readings(bootstrap: str, topic: str, records: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    rng = random.Random(7)
    now_ms = int(time.time() * 1000)
    for i in range(records):
        sensor = SENSORS[i % len(SENSORS)]
        value = {"sensor": sensor, "ts_ms": now_ms - (records - i) * 1000,
                 "temperature": round(20 + rng.gauss(0, 2), 2)}
        producer.produce(topic, key=sensor.encode(), value=json.dumps(value).encode())
        if i % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(30)
    if remaining:
        raise RuntimeError(f"{remaining} demo records were not delivered to {topic}")


def consume_to_lake(bootstrap: str, topic: str, records: int, lake: Path) -> int:
    """Consume the topic and write one Parquet file per hour partition (smoke path)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"demo-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    rows: list[dict] = []
    deadline = time.monotonic() + 60
    try:
        while len(rows) < records and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=1.0):
                if msg.error():
                    raise RuntimeError(f"consume error on {topic}: {msg.error()}")
                rows.append(json.loads(msg.value()))
    finally:
        consumer.close()
    if len(rows) < records:
        raise RuntimeError(f"only {len(rows)} of {records} records arrived from {topic} within 60 s")
    table = pa.Table.from_pylist(rows)
    hours = pa.compute.floor_temporal(pa.compute.cast(table["ts_ms"], pa.timestamp("ms", "UTC")), unit="hour")
    table = table.append_column("hour", pa.compute.strftime(hours, format="%Y-%m-%dT%H"))
    pq.write_to_dataset(table, root_path=str(lake / "sensor_readings"), partition_cols=["hour"])
    return len(rows)


def read_with_spark(lake: Path) -> list[tuple]:
    from lakehouse.session import SparkSettings, build_spark

    spark = build_spark(SparkSettings.from_env(env={}, app_name="demo", local_dir=str(lake / "_spark")))
    df = spark.read.parquet(str(lake / "sensor_readings"))
    df.createOrReplaceTempView("sensor_readings")
    result = spark.sql(
        "SELECT sensor, count(*) AS readings, round(avg(temperature), 2) AS avg_temp, "
        "count(DISTINCT hour) AS hours FROM sensor_readings GROUP BY sensor ORDER BY sensor"
    )
    result.show(truncate=False)
    return [tuple(r) for r in result.collect()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--lake", type=Path, default=Path(".local/demo-lake"))
    parser.add_argument("--keep-services", action="store_true")
    args = parser.parse_args(argv)
    if args.records <= 0:
        parser.error("--records must be positive")

    t0 = time.monotonic()
    _step("starting local services (Kafka KRaft, Iceberg REST, S3)...")
    env = services.up()
    started = [s for s in env.pop("_STARTED").split(",") if s]
    try:
        topic = f"sensor-readings-{uuid.uuid4().hex[:6]}"
        _step(f"producing {args.records} sensor readings to topic {topic}")
        produce_readings(env["KAFKA_BOOTSTRAP"], topic, args.records)
        lake = args.lake.resolve()
        shutil.rmtree(lake, ignore_errors=True)
        _step(f"consuming and writing Hive-partitioned Parquet under {lake}")
        written = consume_to_lake(env["KAFKA_BOOTSTRAP"], topic, args.records, lake)
        _step(f"wrote {written} records; reading them back with Spark")
        rows = read_with_spark(lake)
        total = sum(r[1] for r in rows)
        if total != args.records:
            print(f"[demo] FAILED: Spark counted {total} records, expected {args.records}", file=sys.stderr)
            return 1
        _step(f"done in {time.monotonic() - t0:.1f}s: {total} records from Kafka to the lake and back")
    finally:
        if started and not args.keep_services:
            services.down(started)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The input of ``bench/lake_ingest.py``: N JSON sensor readings on a 24-partition topic, produced once.

Each record is ``{"id", "sensor", "ts_ms", "temp", "hum"}`` (~85 B of JSON): ``id`` is 0..N-1
(exactly-once checks count it), 240 sensors keyed ``sensor-000``.. spread over 24 partitions
(sensor % 24), ``ts_ms`` walks six hours from 2026-01-05T00:00Z in id order (a Hive
``year/month/day/hour`` layout of six hours downstream), temperature and humidity are smooth daily
curves per sensor plus deterministic noise. Each message's Kafka timestamp is its event time
``ts_ms`` (Kafka Connect derives the Hive columns from it with the worker's own transforms), so the
topic keeps its messages forever (``retention.ms=-1``: the event times are in the past). The same
N always gives the same bytes, so a topic whose watermarks already sum to N is reused.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Dict, Iterator, Tuple

import orjson
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 24
SENSORS = 240
BASE_MS = 1_767_571_200_000  # 2026-01-05T00:00:00Z
SPAN_MS = 6 * 3_600_000
TOPIC_CONFIG = {"retention.ms": "-1"}  # event-time timestamps months old: never deleted by retention
SCHEMA_FIELDS = (("id", "long"), ("sensor", "string"), ("ts_ms", "long"), ("temp", "double"), ("hum", "double"))


def reading(i: int, n: int) -> Tuple[int, bytes, bytes]:
    """(partition, key, JSON value) of record ``i`` of ``n``."""
    sensor = (i * 7) % SENSORS
    ts = BASE_MS + (i * SPAN_MS) // max(n, 1)
    phase = (ts % 86_400_000) / 86_400_000 * 2 * math.pi
    noise = ((i * 2654435761) % 1000) / 1000 - 0.5
    value: Dict[str, Any] = {"id": i, "sensor": f"sensor-{sensor:03d}", "ts_ms": ts,
             "temp": round(18 + 6 * math.sin(phase + sensor / 40) + noise, 2),
             "hum": round(55 + 15 * math.cos(phase + sensor / 30) + 2 * noise, 2)}
    return sensor % PARTITIONS, value["sensor"].encode(), orjson.dumps(value)


def readings(n: int) -> Iterator[Tuple[int, bytes, bytes]]:
    for i in range(n):
        yield reading(i, n)


def topic_total(bootstrap: str, topic: str) -> int:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "lake-ingest-probe"})
    try:
        return sum(probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS))
    finally:
        probe.close()


def ensure_topic(bootstrap: str, n: int, name: str = "") -> str:
    """The input topic of ``n`` readings (created and filled only once)."""
    name = name or f"bench-lake-ingest-et-{n}"  # "et": message timestamps are the event times
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if name in admin.list_topics(timeout=10).topics:
        if topic_total(bootstrap, name) == n:
            return name
        admin.delete_topics([name])[name].result(timeout=30)
        time.sleep(2)
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1,
                                  config=TOPIC_CONFIG)])[name].result(timeout=30)
    print(f"producing {n:,} readings to {name} (once)", file=sys.stderr)
    produce(bootstrap, name, readings(n))
    return name


def event_ms(value: bytes) -> int:
    """The ``ts_ms`` of a reading's JSON value (the message's timestamp)."""
    return int(orjson.loads(value)["ts_ms"])


def produce(bootstrap: str, topic: str, items, extra: dict | None = None) -> None:
    """Send ``(partition, key, value)`` readings, each stamped with its event time ``ts_ms``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 500_000, **(extra or {})})
    for partition, key, value in items:
        stamp = event_ms(value)
        while True:
            try:
                producer.produce(topic, value, key, partition=partition, timestamp=stamp)
                break
            except BufferError:
                producer.poll(0.2)
    producer.flush()

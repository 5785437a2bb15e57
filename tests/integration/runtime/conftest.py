"""Helpers for runtime integration tests: every test talks to the real local Kafka broker."""

from __future__ import annotations

import time
import uuid
from typing import Callable, List, Optional

import orjson
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = pytest.mark.integration


@pytest.fixture()
def produce(kafka_bootstrap: str) -> Callable:
    """``produce(topic, [(key, value), ...], partition=None)``; dict/list values are JSON-encoded."""
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def send(topic: str, items, partition: Optional[int] = None, headers=None, timestamp: Optional[int] = None):
        for key, value in items:
            if isinstance(value, (dict, list)):
                value = orjson.dumps(value)
            kwargs = {"partition": partition} if partition is not None else {}
            if headers is not None:
                kwargs["headers"] = headers
            if timestamp is not None:
                kwargs["timestamp"] = timestamp
            producer.produce(topic, value, key, **kwargs)
        assert producer.flush(30) == 0

    return send


@pytest.fixture()
def read_topic(kafka_bootstrap: str) -> Callable:
    """``read_topic(topic, expected, timeout=20, committed_only=True)`` -> list of confluent messages."""

    def read(topic: str, expected: int, timeout: float = 20, committed_only: bool = True, settle: float = 0.0) -> List:
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed" if committed_only else "read_uncommitted"})
        consumer.subscribe([topic])
        out, deadline = [], time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and len(out) < expected:
                out.extend(m for m in consumer.consume(1000, 0.5) if m.error() is None)
            end = time.monotonic() + settle  # keep reading a little to catch unexpected extras
            while time.monotonic() < end:
                out.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
        finally:
            consumer.close()
        return out

    return read


@pytest.fixture()
def committed(kafka_bootstrap: str) -> Callable:
    """``committed(group, topic, partitions=1)`` -> {partition: committed offset (-1001 if none)}."""

    def get(group: str, topic: str, partitions: int = 1) -> dict:
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": group})
        try:
            tps = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        finally:
            consumer.close()
        return {tp.partition: tp.offset for tp in tps}

    return get


@pytest.fixture()
def new_app(kafka_bootstrap: str, tmp_path) -> Callable:
    """``new_app(**kwargs)`` -> (Application, consumer group); earliest offsets, quiet logs."""
    from stream_edge import Application

    def make(**kwargs):
        group = kwargs.pop("consumer_group", None) or f"g-{uuid.uuid4().hex[:10]}"
        kwargs.setdefault("auto_offset_reset", "earliest")
        kwargs.setdefault("loglevel", None)
        kwargs.setdefault("state_dir", tmp_path / "state")
        return Application(kafka_bootstrap, consumer_group=group, **kwargs), group

    return make

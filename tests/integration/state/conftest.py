"""Helpers for the state integration tests (real local broker; topics unique per test)."""

from __future__ import annotations

import time
import uuid
from typing import Callable, List, Optional

import orjson
import pytest
from confluent_kafka import Consumer, Producer

pytestmark = pytest.mark.integration


@pytest.fixture()
def send(kafka_bootstrap: str) -> Callable:
    """``send(topic, [(key, value, timestamp), ...], partition=None)``; values JSON-encoded."""
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def produce(topic: str, items, partition: Optional[int] = None) -> None:
        for key, value, ts in items:
            kwargs = {"partition": partition} if partition is not None else {}
            if ts is not None:
                kwargs["timestamp"] = ts
            producer.produce(topic, orjson.dumps(value), key, **kwargs)
        assert producer.flush(30) == 0

    return produce


@pytest.fixture()
def read_all(kafka_bootstrap: str) -> Callable:
    """``read_all(topic, expected, timeout)`` -> confluent messages (at least ``expected``, or what came)."""

    def read(topic: str, expected: int, timeout: float = 30, settle: float = 1.0) -> List:
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": "read_committed"})
        consumer.subscribe([topic])
        out, deadline = [], time.monotonic() + timeout
        try:
            while time.monotonic() < deadline and len(out) < expected:
                out.extend(m for m in consumer.consume(1000, 0.5) if m.error() is None)
            end = time.monotonic() + settle
            while time.monotonic() < end:
                out.extend(m for m in consumer.consume(1000, 0.2) if m.error() is None)
        finally:
            consumer.close()
        return out

    return read


@pytest.fixture()
def group() -> str:
    return f"state-it-{uuid.uuid4().hex[:10]}"

"""Helpers for the source tests: applications on the real broker and topic readers."""

from __future__ import annotations

import time
import uuid
from typing import Callable, List

import pytest


@pytest.fixture()
def new_app(kafka_bootstrap: str, tmp_path) -> Callable:
    """``new_app(**kwargs)`` -> Application (earliest offsets, quiet logs, a fresh group)."""
    from stream_edge import Application

    def make(**kwargs):
        kwargs.setdefault("consumer_group", f"g-{uuid.uuid4().hex[:10]}")
        kwargs.setdefault("auto_offset_reset", "earliest")
        kwargs.setdefault("loglevel", None)
        kwargs.setdefault("state_dir", tmp_path / "state")
        return Application(kafka_bootstrap, **kwargs)

    return make


@pytest.fixture()
def read_all(kafka_bootstrap: str) -> Callable:
    """``read_all(topic, partition=0)`` -> every message of the partition, in offset order ([] while
    the topic does not exist)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    def read(topic: str, partition: int = 0, timeout: float = 30) -> List:
        consumer = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": f"reader-{uuid.uuid4().hex}",
                             "enable.auto.commit": False})
        try:
            try:
                low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            except KafkaException:  # the topic does not exist (yet)
                return []
            if high <= low:
                return []
            consumer.assign([TopicPartition(topic, partition, low)])
            out: List = []
            deadline = time.monotonic() + timeout
            while (not out or out[-1].offset() < high - 1) and time.monotonic() < deadline:
                out.extend(m for m in consumer.consume(1000, 0.5) if m.error() is None)
            return out
        finally:
            consumer.close()

    return read

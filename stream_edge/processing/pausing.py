"""PausingManager: pause a topic-partition on sink backpressure and resume it later."""

from __future__ import annotations

import logging
import time
from typing import Dict, Tuple

from confluent_kafka import TopicPartition

__all__ = ("PausingManager",)

logger = logging.getLogger("stream_edge")


class PausingManager:
    """Pauses partitions (seeking back so nothing is skipped) and resumes them after a delay."""

    def __init__(self, consumer) -> None:
        self._consumer = consumer
        self._resume_at: Dict[Tuple[str, int], float] = {}
        self._next_resume = float("inf")

    def pause(self, topic: str, partition: int, offset_to_seek: int, resume_after: float) -> None:
        """Pause ``topic[partition]``, seek it to ``offset_to_seek``, resume in ``resume_after`` s."""
        tp = TopicPartition(topic, partition, offset_to_seek)
        logger.warning("backpressure: pausing topic '%s' partition %s for %.1fs; will resume from offset %s",
                       topic, partition, resume_after, offset_to_seek)
        self._consumer.pause([tp])
        if offset_to_seek >= 0:
            self._consumer.seek(tp)
        at = time.monotonic() + resume_after
        self._resume_at[(topic, partition)] = at
        self._next_resume = min(self._next_resume, at)

    def is_paused(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._resume_at

    def resume_if_ready(self) -> None:
        """Resume the partitions whose delay has passed (cheap when nothing is paused)."""
        now = time.monotonic()
        if now < self._next_resume:
            return
        ready = [tp for tp, at in self._resume_at.items() if at <= now]
        for topic, partition in ready:
            del self._resume_at[(topic, partition)]
            logger.info("resuming topic '%s' partition %s after backpressure", topic, partition)
            self._consumer.resume([TopicPartition(topic, partition)])
        self._next_resume = min(self._resume_at.values(), default=float("inf"))

    def revoke(self, topic: str, partition: int) -> None:
        """Forget a revoked (or lost) partition, resuming it first if it was paused: librdkafka
        keeps a partition's pause across a rebalance, so one that comes back would stay paused."""
        if self._resume_at.pop((topic, partition), None) is not None:
            self._consumer.resume([TopicPartition(topic, partition)])  # still assigned: in the callback
        self._next_resume = min(self._resume_at.values(), default=float("inf"))

    @property
    def paused(self) -> bool:
        return bool(self._resume_at)

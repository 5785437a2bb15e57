"""PausingManager: pause a topic-partition on sink backpressure and resume it later.

It also remembers since when each partition has been *blocked*: paused by backpressure, and not
committed since (a partition that resumes and is backpressured again at the next checkpoint stays
blocked since its first pause). ``/readyz`` reports an instance whose partition has been blocked
too long as not ready.
"""

from __future__ import annotations

import logging
import time
from typing import Dict, Iterable, Optional, Tuple

from confluent_kafka import TopicPartition

__all__ = ("PausingManager",)

logger = logging.getLogger("stream_edge")


class PausingManager:
    """Pauses partitions (seeking back so nothing is skipped) and resumes them after a delay."""

    def __init__(self, consumer) -> None:
        self._consumer = consumer
        self._resume_at: Dict[Tuple[str, int], float] = {}
        self._next_resume = float("inf")
        self._blocked_since: Dict[Tuple[str, int], float] = {}

    def pause(self, topic: str, partition: int, offset_to_seek: int, resume_after: float,
              reason: str = "backpressure") -> None:
        """Pause ``topic[partition]``, seek it to ``offset_to_seek``, resume in ``resume_after`` s
        (``reason``: what the log line says, ``backpressure`` or ``outage``)."""
        tp = TopicPartition(topic, partition, offset_to_seek)
        # One line per state change: the first pause of a streak is a WARNING, the retries of a
        # partition still blocked (not committed since) are DEBUG, so a long outage logs two lines.
        level = logging.DEBUG if (topic, partition) in self._blocked_since else logging.WARNING
        logger.log(level, "%s: pausing topic '%s' partition %s for %.1fs; will resume from offset %s",
                   reason, topic, partition, resume_after, offset_to_seek)
        self._consumer.pause([tp])
        if offset_to_seek >= 0:
            self._consumer.seek(tp)
        now = time.monotonic()
        self._blocked_since.setdefault((topic, partition), now)
        at = now + resume_after
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
            logger.debug("resuming topic '%s' partition %s after backpressure", topic, partition)
            self._consumer.resume([TopicPartition(topic, partition)])
        self._next_resume = min(self._resume_at.values(), default=float("inf"))

    def committed(self, partitions: Iterable[Tuple[str, int]]) -> None:
        """These partitions committed a checkpoint: they are no longer blocked."""
        if self._blocked_since:
            for tp in partitions:
                if self._blocked_since.pop(tp, None) is not None:
                    logger.info("topic '%s' partition %s committed again after backpressure", *tp)

    @property
    def blocked_since(self) -> Optional[float]:
        """``time.monotonic()`` of the oldest pause of a partition not committed since (None: none)."""
        return min(self._blocked_since.values()) if self._blocked_since else None

    def revoke(self, topic: str, partition: int) -> None:
        """Forget a revoked (or lost) partition, resuming it first if it was paused: librdkafka
        keeps a partition's pause across a rebalance, so one that comes back would stay paused."""
        if self._resume_at.pop((topic, partition), None) is not None:
            self._consumer.resume([TopicPartition(topic, partition)])  # still assigned: in the callback
        self._blocked_since.pop((topic, partition), None)
        self._next_resume = min(self._resume_at.values(), default=float("inf"))

    @property
    def paused(self) -> bool:
        return bool(self._resume_at)

"""OutageTracker: how long each partition has waited for an unavailable service, and when to give up.

An outage (``stream_edge.errors``: a service that refuses or does not answer) is no record's
fault: the runtime pauses the partition, seeks it back to the record that met it, and retries
after an exponential backoff (1 s, 2 s, 4 s ... capped at 30 s), so the records stay in Kafka
and are processed once the service answers again. A partition's streak ends when a checkpoint
commits it at or past the record that failed; a streak longer than ``max_retry_seconds`` stops
the application with :class:`~stream_edge.errors.OutageTimeoutError` naming the service and
the record.

One WARNING when a streak starts, DEBUG for its retries, one INFO when it ends.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Optional, Tuple

from stream_edge.errors import OutageTimeoutError, service_of
from stream_edge.logging import mask_secrets

__all__ = ("OutageTracker", "DEFAULT_MAX_RETRY_SECONDS")

logger = logging.getLogger("stream_edge")
TopicPartitionKey = Tuple[str, int]
DEFAULT_MAX_RETRY_SECONDS = 300.0


@dataclass
class _Streak:
    since: float
    service: str
    offset: int  # the record that met the outage (-1: a sink's write, any later commit ends it)
    shown: bool  # reported to /readyz at once (a sink's own backpressure waits for ready_paused_seconds)
    attempts: int = 0


class OutageTracker:
    """Backoff and the give-up bound for outages, per topic partition.

    >>> tracker = OutageTracker(max_retry_seconds=60, clock=lambda: 0.0)
    >>> tracker.failed(("t", 0), ConnectionRefusedError("refused"), "topic 't' partition 0 offset 5", 5)
    1.0
    >>> tracker.failed(("t", 0), ConnectionRefusedError("refused"), "topic 't' partition 0 offset 5", 5)
    2.0
    >>> tracker.recovered({("t", 0): 5}); tracker.active
    False
    """

    def __init__(self, max_retry_seconds: float = DEFAULT_MAX_RETRY_SECONDS, base_seconds: float = 1.0,
                 cap_seconds: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        if max_retry_seconds <= 0:
            raise ValueError(f"max_retry_seconds must be positive, got {max_retry_seconds}")
        self.max_retry_seconds = max_retry_seconds
        self.base_seconds = base_seconds
        self.cap_seconds = cap_seconds
        self._clock = clock
        self._streaks: Dict[TopicPartitionKey, _Streak] = {}
        self.retries = 0  # outages met (each is one pause and retry)
        self.changed = False  # the set of partitions in an outage changed (the runner reports it)

    @property
    def active(self) -> bool:
        return bool(self._streaks)

    @property
    def since(self) -> Optional[float]:
        """The clock's time of the oldest shown streak's start (None: no outage to show)."""
        return min((s.since for s in self._streaks.values() if s.shown), default=None)

    @property
    def service(self) -> Optional[str]:
        """The service of the oldest shown streak (None: no outage to show)."""
        oldest = min((s for s in self._streaks.values() if s.shown), key=lambda s: s.since, default=None)
        return None if oldest is None else oldest.service

    def failed(self, tp: TopicPartitionKey, exc: BaseException, where: str, offset: int = -1,
               delay: Optional[float] = None, service: Optional[str] = None, shown: bool = True) -> float:
        """Count an outage of ``tp`` met at ``where``; returns the pause before the retry (``delay``
        if the caller has its own backoff). Raises :class:`OutageTimeoutError` once the partition
        has waited longer than ``max_retry_seconds``. ``shown`` False: a sink's own backpressure,
        bounded here but not reported as an outage (``/readyz`` shows it after
        ``ready_paused_seconds``, as a blocked partition)."""
        now = self._clock()
        streak = self._streaks.get(tp)
        service = mask_secrets(service or service_of(exc))
        announce = shown and (streak is None or not streak.shown)  # one WARNING when an outage shows
        if streak is None:
            streak = self._streaks[tp] = _Streak(now, service, offset, shown)
            self.changed = self.changed or shown
        elif shown and not streak.shown:
            streak.shown, streak.service = True, service
            self.changed = True
        streak.attempts += 1
        streak.offset = max(streak.offset, offset)  # ends once a commit reaches the latest record that failed
        self.retries += 1
        waited = now - streak.since
        text = mask_secrets(f"{type(exc).__name__}: {exc}")
        if waited >= self.max_retry_seconds:
            error = OutageTimeoutError(
                f"{service} has been unavailable for {waited:.0f}s (max_retry_seconds={self.max_retry_seconds:g}) "
                f"at {where}; stopping: the record and those after it stay in Kafka, uncommitted ({text})")
            error.__cause__ = exc
            raise error
        if delay is None:
            delay = min(self.cap_seconds, self.base_seconds * (2 ** min(streak.attempts - 1, 30)))
        if announce:
            logger.warning("outage: %s at %s (%s); pausing the partition and retrying with backoff (%.0f s, "
                           "doubling up to %.0f s, for at most %gs); the record is not dead-lettered",
                           service, where, text, delay, self.cap_seconds, self.max_retry_seconds)
        else:
            logger.debug("outage: %s still unavailable at %s (attempt %d, next pause %.1f s)", service, where,
                         streak.attempts, delay)
        return delay

    def recovered(self, committed: Mapping[TopicPartitionKey, int]) -> None:
        """A checkpoint committed these last offsets: a streak whose record is committed ends."""
        if not self._streaks:
            return
        for tp, last in committed.items():
            streak = self._streaks.get(tp)
            if streak is not None and last >= streak.offset:
                del self._streaks[tp]
                self.changed = self.changed or streak.shown
                if not streak.shown:
                    continue
                logger.info("outage over: topic '%s' partition %s processed again after %d attempt(s) (%s)",
                            tp[0], tp[1], streak.attempts, streak.service)

    def forget(self, tp: TopicPartitionKey) -> None:
        """The partition left this instance (a rebalance)."""
        streak = self._streaks.pop(tp, None)
        if streak is not None and streak.shown:
            self.changed = True

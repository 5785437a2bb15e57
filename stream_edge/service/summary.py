"""RunSummaryLog: one INFO line per interval saying what a running pipeline did.

Operators read the log, not only dashboards: every ``interval`` seconds (checked between batches,
never per message) the service logs how many messages it processed, its rate, checkpoints,
errors, rebalances and the partitions it holds, e.g.::

    summary: 12,000 messages in 60.0s (200/s), total 1,530,000; checkpoints 12 (last 4 ms);
    errors 0; partitions 4; rebalances 1

Example::

    app.add_run_observer(RunSummaryLog(interval=60))
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Mapping, Optional, Sequence

from stream_edge.processing.observer import RunObserver, TopicPartitionKey

__all__ = ("RunSummaryLog",)

logger = logging.getLogger("stream_edge.summary")


class RunSummaryLog(RunObserver):
    """Logs a summary line every ``interval`` seconds and a last one when the run stops."""

    def __init__(self, interval: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 log: logging.Logger = logger) -> None:
        if interval <= 0:
            raise ValueError(f"interval must be a positive number of seconds, got {interval!r}")
        self.interval = interval
        self._clock = clock
        self._log = log
        self._since = 0  # messages since the last line
        self.total = 0
        self.checkpoints = 0
        self.errors = 0
        self.dead_letters = 0
        self.rebalances = 0
        self._last_checkpoint_ms: Optional[float] = None
        self._partitions: set = set()
        self._window_start = clock()

    def on_start(self, topics: Sequence[str], consumer: Any) -> None:
        self._window_start = self._clock()

    def on_batch(self, messages: Sequence[Any], processed: int, seconds: float) -> None:
        self._since += processed
        self.total += processed
        if self._clock() - self._window_start >= self.interval:
            self.emit()

    def on_checkpoint(self, seconds: float, offsets: Mapping[TopicPartitionKey, int]) -> None:
        self.checkpoints += 1
        self._last_checkpoint_ms = seconds * 1000
        # Idle pipelines still checkpoint (and log) on schedule.
        if self._clock() - self._window_start >= self.interval:
            self.emit()

    def on_assign(self, partitions: Sequence[TopicPartitionKey]) -> None:
        self.rebalances += 1
        self._partitions.update(partitions)

    def on_revoke(self, partitions: Sequence[TopicPartitionKey], lost: bool) -> None:
        self.rebalances += 1
        self._partitions.difference_update(partitions)

    def on_processing_error(self, exc: BaseException) -> None:
        self.errors += 1

    def on_dead_letter(self, stage: str, exc: BaseException) -> None:
        self.dead_letters += 1

    def on_stop(self, error: Optional[BaseException]) -> None:
        self.emit(final=True)

    def line(self, elapsed: float, final: bool = False) -> str:
        """The summary text for ``elapsed`` seconds since the previous line."""
        rate = self._since / elapsed if elapsed > 0 else 0.0
        last = "" if self._last_checkpoint_ms is None else f" (last {self._last_checkpoint_ms:.0f} ms)"
        dead = f"dead-lettered {self.dead_letters:,}; " if self.dead_letters else ""  # only with a dead-letter topic
        return (f"{'final summary' if final else 'summary'}: {self._since:,} messages in {elapsed:.1f}s "
                f"({rate:,.0f}/s), total {self.total:,}; checkpoints {self.checkpoints}{last}; "
                f"errors {self.errors}; {dead}partitions {len(self._partitions)}; rebalances {self.rebalances}")

    def emit(self, final: bool = False) -> None:
        now = self._clock()
        self._log.info("%s", self.line(now - self._window_start, final))
        self._window_start = now
        self._since = 0

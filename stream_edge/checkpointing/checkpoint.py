"""Checkpoint: the durability unit. Commit order (see docs/internals.md):

1. flush sinks (a failure fails the checkpoint; backpressure pauses and rewinds its partition)
2. ``state_manager.prepare_checkpoint()`` (produce changelogs)
3. flush the producer (a delivery failure fails the checkpoint)
4. commit the consumer offsets (under exactly-once: send them to the transaction and commit it)
5. ``state_manager.commit_checkpoint(offsets)``

Offsets are stored per batch by the processing loop, only for messages fully processed, so a crash
anywhere replays from the last committed offset and loses nothing.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from confluent_kafka import KafkaException, TopicPartition

from .exceptions import CheckpointConsumerCommitError, InvalidStoredOffset

__all__ = ("BaseCheckpoint", "Checkpoint")

logger = logging.getLogger("stream_edge")


class BaseCheckpoint:
    """Tracks processed offsets and decides when the checkpoint is due."""

    def __init__(self, commit_interval: float, commit_every: int = 0) -> None:
        self._commit_interval = commit_interval
        self._commit_every = commit_every
        self._tp_offsets: Dict[Tuple[str, int], int] = {}
        self._starting_tp_offsets: Dict[Tuple[str, int], int] = {}
        self._created_at = time.monotonic()
        self._processed = 0

    def expired(self) -> bool:
        """Due by time, or by count when ``commit_every`` > 0."""
        if 0 < self._commit_every <= self._processed:
            return True
        return time.monotonic() - self._created_at >= self._commit_interval

    def remaining(self) -> int:
        """How many messages fit before ``commit_every`` is reached (a large number if unset)."""
        if self._commit_every > 0:
            return max(self._commit_every - self._processed, 1)
        return 1 << 30

    def empty(self) -> bool:
        return not self._tp_offsets

    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record that ``offset`` (and everything before it) of ``topic[partition]`` is processed."""
        tp = (topic, partition)
        stored = self._tp_offsets.get(tp)
        if stored is not None and offset < stored:
            raise InvalidStoredOffset(f"offset {offset} of topic '{topic}' partition {partition} is lower "
                                      f"than the stored {stored}")
        self._tp_offsets[tp] = offset
        self._processed += 1

    def store_batch(self, last: Dict[Tuple[str, int], int], first: Dict[Tuple[str, int], int], count: int) -> None:
        """Record a processed batch: last offsets per partition, first offsets, message count."""
        self._tp_offsets.update(last)
        for tp, offset in first.items():
            self._starting_tp_offsets.setdefault(tp, offset)
        self._processed += count

    def starts_known(self) -> int:
        """How many partitions have their first offset of this checkpoint recorded."""
        return len(self._starting_tp_offsets)

    @property
    def processed(self) -> int:
        return self._processed

    @property
    def first_offsets(self) -> Dict[Tuple[str, int], int]:
        """Where each partition of this checkpoint started (known once the runner tracks it)."""
        return dict(self._starting_tp_offsets)

    @property
    def partitions(self) -> List[Tuple[str, int]]:
        """The partitions with an offset stored in this checkpoint."""
        return list(self._tp_offsets)


class Checkpoint(BaseCheckpoint):
    """The Application's checkpoint."""

    def __init__(self, commit_interval: float, commit_every: int, producer: Any, consumer: Any,
                 state_manager: Optional[Any] = None, sink_manager: Optional[Any] = None,
                 pausing_manager: Optional[Any] = None, exactly_once: bool = False,
                 on_sink_flush: Optional[Callable[[Any, str, int, float], None]] = None) -> None:
        super().__init__(commit_interval, commit_every)
        self._on_sink_flush = on_sink_flush
        self._producer = producer
        self._consumer = consumer
        self._state_manager = state_manager
        self._sink_manager = sink_manager
        self._pausing_manager = pausing_manager
        self._exactly_once = exactly_once
        if exactly_once:
            producer.begin_transaction()

    def get_store_transaction(self, stream_id: str, partition: int, store_name: str = "default") -> Any:
        """The transaction of ``store_name`` of the stream ``stream_id`` (a dataframe's
        ``stream_id``: its topic, or ``left--right`` after ``concat``) for ``partition``, as Quix
        Streams 3.28 names it. Operators hold a ``StoreRef`` instead."""
        if self._state_manager is None:
            raise RuntimeError("this application has no state: register a stateful operation first")
        return self._state_manager.get_transaction(stream_id, partition, store_name)

    def close(self) -> None:
        """End an empty checkpoint (an empty Kafka transaction is aborted, it is timeboxed)."""
        if self._exactly_once:
            self._producer.abort_transaction()

    def _flush_sinks(self) -> Dict[Tuple[str, int], float]:
        """Flush every sink per partition; returns the backpressured partitions (retry-after seconds).

        The sinks drop their batch of a backpressured partition (it will be replayed).
        """
        manager = self._sink_manager
        if manager is None or not manager.sinks:
            return {}
        from stream_edge.sinks import SinkBackpressureError  # owned by the sinks package

        backpressured: Dict[Tuple[str, int], float] = {}
        if getattr(manager, "has_whole_sinks", False):  # sinks with Quix's flush(): once; backpressure pauses all
            try:
                manager.flush_whole(self._on_sink_flush)
            except SinkBackpressureError as exc:
                manager.pause_all(self._tp_offsets)
                return {tp: exc.retry_after or 0 for tp in self._tp_offsets}
        for (topic, partition) in list(self._tp_offsets):
            try:
                manager.flush(topic, partition, self._on_sink_flush)
            except SinkBackpressureError as exc:
                backpressured[(topic, partition)] = exc.retry_after or 0
        return backpressured

    def _rewind(self, partitions: Dict[Tuple[str, int], float]) -> None:
        """Pause each partition and seek it back to this checkpoint's first offset (replayed later)."""
        for (topic, partition), retry_after in partitions.items():
            start = self._starting_tp_offsets.get((topic, partition))
            if self._pausing_manager is not None and start is not None:
                self._pausing_manager.pause(topic, partition, start, retry_after)
            self._tp_offsets.pop((topic, partition), None)

    def commit(self) -> Dict[Tuple[str, int], int]:
        """Commit in the documented order; returns the committed offsets (last processed per partition)."""
        backpressured = self._flush_sinks()
        state = self._state_manager
        if backpressured and self._exactly_once:
            # A Kafka transaction is all or nothing: the outputs already produced for the
            # backpressured partitions are in it, next to every other partition's. Abort it and
            # replay every partition of this checkpoint (the others without delay), so nothing is
            # committed twice. Sinks of the other partitions may see their records again
            # (sinks are at-least-once).
            self._producer.abort_transaction()
            if state is not None:
                state.abort_checkpoint()
            self._rewind({tp: backpressured.get(tp, 0.0) for tp in self._tp_offsets})
            return {}
        # At-least-once: only the backpressured partitions are replayed; the others commit.
        self._rewind(backpressured)
        offsets = dict(self._tp_offsets)
        if state is not None:
            # Partitions missing from ``offsets`` (rewound after backpressure) roll their changes back.
            state.prepare_checkpoint(offsets, rewound=backpressured)
        positions = [TopicPartition(t, p, o + 1) for (t, p), o in offsets.items()]
        if self._exactly_once:
            self._producer.flush()
            self._producer.commit_transaction(positions, self._consumer.consumer_group_metadata())
        else:
            self._producer.flush()
            if positions:
                try:
                    results = self._consumer.commit(offsets=positions, asynchronous=False)
                except KafkaException as exc:
                    raise CheckpointConsumerCommitError(f"offset commit failed: {exc}") from exc
                for tp in results or ():
                    if tp.error is not None:
                        raise CheckpointConsumerCommitError(
                            f"offset commit failed for topic '{tp.topic}' partition {tp.partition}: {tp.error}")
        if state is not None:
            state.commit_checkpoint(offsets)
        if offsets:
            logger.debug("checkpoint committed: %s", offsets)
        return offsets

"""Rebuild store partitions from their changelog before processing starts.

Recovery reads the changelog partition from the offset after the one the store last applied
(from its start for a memory store or a store that cannot be trusted) up to the high watermark,
applies the records in large atomic writes and logs its progress. It never waits forever: no
progress for ``timeout`` seconds is an error that names the topic and partition.

Example::

    recovery = ChangelogRecovery(consumer_config={"bootstrap.servers": "127.0.0.1:9092"})
    recovery.recover(backend, "changelog__g--input--default", 0, committed={"input": 1200}, label="...")
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

from .backends import StoreBackend
from .changelog import processed_offsets_of
from .exceptions import StateRecoveryError

__all__ = ("ChangelogRecovery",)

logger = logging.getLogger("stream_edge.state")

_WRITE_EVERY = 10_000


class ChangelogRecovery:
    """Owns a private, manually assigned consumer used only to read changelogs and watermarks."""

    def __init__(self, consumer_config: Dict[str, Any], timeout: float = 60.0, progress_interval: float = 5.0) -> None:
        config = {k: v for k, v in consumer_config.items()
                  if k not in ("on_commit", "group.instance.id", "partition.assignment.strategy")}
        config.update({
            "group.id": f"{config.get('group.id', 'stream-edge')}-state-recovery-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        })
        self._config = config
        self._consumer: Any = None
        self.timeout = timeout
        self.progress_interval = progress_interval

    @property
    def consumer(self) -> Any:
        if self._consumer is None:
            import confluent_kafka

            self._consumer = confluent_kafka.Consumer(self._config)
        return self._consumer

    def watermarks(self, topic: str, partition: int) -> Tuple[int, int]:
        """``(low, high)`` offsets of a partition (high: the last stable offset + 1).

        A topic created moments ago (changelogs are created at start-up) may not have a leader
        in the broker's metadata yet: those transient errors are retried for a few seconds.
        """
        from confluent_kafka import KafkaError, KafkaException, TopicPartition

        transient = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                     KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION}
        deadline = time.monotonic() + min(self.timeout, 30.0)
        while True:
            try:
                return self.consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=self.timeout,
                                                           cached=False)
            except KafkaException as exc:
                code = exc.args[0].code()
                if code not in transient or time.monotonic() >= deadline:
                    raise
                logger.debug("watermarks of %s[%d] not available yet (%s); retrying", topic, partition, exc)
                if code == KafkaError._UNKNOWN_PARTITION:
                    # a local error: the client's metadata cache predates the partition, and
                    # librdkafka refreshes it only every few minutes; ask the broker for the topic now
                    # (a failure here is left to the next attempt, which reports what is still wrong)
                    with contextlib.suppress(KafkaException):
                        self.consumer.list_topics(topic, timeout=min(self.timeout, 5.0))
                time.sleep(0.2)

    def recover(self, backend: StoreBackend, topic: str, partition: int,
                committed: Mapping[str, Optional[int]], label: str, topics: Sequence[str] = ()) -> int:
        """Bring ``backend`` up to date with changelog ``topic[partition]``; return records applied.

        ``committed`` holds each source topic's committed offset for this partition (next to
        read, or None when the group has none): a record produced by a checkpoint at or after
        the committed offset of one of its topics is skipped. A topic missing from ``committed``
        (not assigned in this rebalance) does not hold a record back. ``topics`` are the
        stream's input topics (default: those of ``committed``).
        """
        from confluent_kafka import KafkaError, TopicPartition

        names = tuple(topics) or tuple(committed)
        low, high = self.watermarks(topic, partition)
        stored = backend.changelog_offset
        if stored is not None and (stored >= high or stored + 1 < low):
            logger.warning("%s: local state is at changelog offset %d but changelog %s[%d] holds %d..%d; "
                           "dropping the local state and rebuilding it from the changelog",
                           label, stored, topic, partition, low, high - 1)
            backend.clear()
            stored = None
        start = low if stored is None else stored + 1
        if start >= high:
            logger.debug("%s: state is up to date with changelog %s[%d]", label, topic, partition)
            return 0
        total = high - start
        logger.info("%s: recovering from changelog %s[%d], offsets %d..%d (%d records)",
                    label, topic, partition, start, high - 1, total)
        consumer = self.consumer
        tp = TopicPartition(topic, partition, start)
        consumer.assign([tp])
        applied = skipped = 0
        batch: Dict[bytes, Optional[bytes]] = {}
        position = start
        began = last_log = last_progress = time.monotonic()
        try:
            while position < high:
                messages = consumer.consume(1000, timeout=0.5)
                now = time.monotonic()
                for msg in messages:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise StateRecoveryError(f"{label}: reading changelog {topic}[{partition}] failed: {err}")
                    processed = processed_offsets_of(msg.headers(), names)
                    if processed is not None and _uncommitted(processed, committed):
                        skipped += 1  # written by a checkpoint whose offsets were never committed
                    else:
                        batch[msg.key()] = msg.value()
                        applied += 1
                    position = msg.offset() + 1
                if messages:
                    last_progress = now
                else:
                    # transaction markers occupy offsets: ask the consumer where it really is
                    position = max(position, consumer.position([TopicPartition(topic, partition)])[0].offset)
                    if now - last_progress > self.timeout:
                        raise StateRecoveryError(
                            f"{label}: no progress reading changelog {topic}[{partition}] for {self.timeout:.0f}s "
                            f"(at offset {position}, high watermark {high}); check the broker and that the "
                            f"changelog topic is readable by this consumer")
                if len(batch) >= _WRITE_EVERY:
                    backend.write(batch, None, position - 1)
                    batch = {}
                if now - last_log >= self.progress_interval:
                    done = position - start
                    logger.info("%s: recovery progress %d/%d records (%.0f%%)", label, done, total,
                                100.0 * done / max(total, 1))
                    last_log = now
            backend.write(batch, None, high - 1)
        finally:
            consumer.unassign()
        logger.info("%s: recovered %d records from changelog %s[%d] in %.1fs%s", label, applied, topic, partition,
                    time.monotonic() - began,
                    f" ({skipped} records of uncommitted checkpoints skipped)" if skipped else "")
        return applied

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def _uncommitted(processed: Mapping[str, int], committed: Mapping[str, Optional[int]]) -> bool:
    """True when a record's checkpoint is past the committed offset of one of its topics."""
    for source, offset in processed.items():
        if source not in committed:
            continue  # that topic's partition is not assigned here: nothing to compare with
        limit = committed[source]
        if limit is None or offset >= limit:
            return True
    return False

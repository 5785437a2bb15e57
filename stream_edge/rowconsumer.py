"""RowConsumer: a Consumer that subscribes to Topics and deserializes messages to Rows.

The Application's processing loop reads raw batches with ``consume()`` and deserializes with each
topic's one-argument functions; ``poll_row`` is the per-message v3 API for other uses.
"""

from __future__ import annotations

import logging
from typing import Callable, Dict, List, Optional, Sequence, Union

from confluent_kafka import TopicPartition

from stream_edge.error_callbacks import ConsumerErrorCallback, default_on_consumer_error
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.consumer import AutoOffsetReset, BaseConsumer
from stream_edge.kafka.exceptions import KafkaConsumerException, KafkaError, client_error_logger
from stream_edge.kafka.timestamp_order import DEFAULT_BUFFER_LIMIT, TimestampOrder
from stream_edge.models.rows import Row
from stream_edge.models.topics import Topic

__all__ = ("RowConsumer",)

logger = logging.getLogger("stream_edge")


class RowConsumer(BaseConsumer):
    """Consume Kafka messages of registered Topics.

    Example::

        consumer = RowConsumer("localhost:9092", "group", "earliest")
        consumer.subscribe([topic])
        row = consumer.poll_row(timeout=1.0)
    """

    reopen_after_close = True  # the Application's consumer: each run() closes it, the next reopens

    def __init__(self, broker_address: Union[str, ConnectionConfig], consumer_group: str,
                 auto_offset_reset: AutoOffsetReset, auto_commit_enable: bool = True,
                 on_commit: Optional[Callable] = None, extra_config: Optional[dict] = None,
                 on_error: Optional[ConsumerErrorCallback] = None,
                 error_callback: Optional[Callable[[KafkaError], None]] = None,
                 max_partition_buffer_size: int = DEFAULT_BUFFER_LIMIT) -> None:
        super().__init__(broker_address, consumer_group, auto_offset_reset, auto_commit_enable=auto_commit_enable,
                         on_commit=on_commit, extra_config=extra_config,
                         error_callback=error_callback or client_error_logger("consumer"))
        self._on_error = on_error or default_on_consumer_error
        self._topics: Dict[str, Topic] = {}
        self._order: Optional[TimestampOrder] = None  # set when joins need timestamp order
        self._buffer_limit = max_partition_buffer_size

    def order_by_timestamp(self, topics: Sequence[str]) -> None:
        """Hand out the messages of ``topics`` (co-partitioned, e.g. the two sides of a join) in
        timestamp order per partition number, as Quix's partition buffers do; other topics are
        unaffected. Called when a join is defined, before ``subscribe``. A partition holding more
        than ``max_partition_buffer_size`` messages goes anyway, as in Quix."""
        if self._order is None:
            self._order = TimestampOrder(_PlainReads(self), self._buffer_limit)
        self._order.add_group(topics)

    def consume(self, num_messages: int = 1, timeout: Optional[float] = None) -> list:
        if self._order is None:
            return super().consume(num_messages, timeout)
        return self._order.consume(num_messages, -1 if timeout is None else timeout)

    def position(self, partitions: List[TopicPartition]) -> List[TopicPartition]:
        """Positions; with timestamp order, a partition's first held-back message (a checkpoint
        never commits past what was not processed)."""
        if self._order is None:
            return super().position(partitions)
        return self._order.position(partitions)

    @property
    def topics(self) -> Dict[str, Topic]:
        return self._topics

    def subscribe(self, topics: List[Topic], on_assign: Optional[Callable] = None,  # type: ignore[override]
                  on_revoke: Optional[Callable] = None, on_lost: Optional[Callable] = None) -> None:
        """Subscribe to Topic objects (their serializers are used by poll_row)."""
        self._topics = {t.name: t for t in topics}
        names = [t.name for t in topics]
        if self._order is not None:
            self._order.subscribe(names, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
            return
        super().subscribe(names, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def poll_row(self, timeout: Optional[float] = None) -> Union[Row, List[Row], None]:
        """One message as a Row (a list with split values); None on timeout or ignored message."""
        msg = self.poll(timeout)
        if msg is None:
            return None
        try:
            err = msg.error()
            if err is not None:
                raise KafkaConsumerException(err, msg.topic(), msg.partition())
            return self._topics[msg.topic()].row_deserialize(msg)
        except Exception as exc:  # noqa: BLE001 - routed to on_consumer_error
            if self._on_error(exc, msg, logger):
                return None
            raise


class _PlainReads:
    """The consumer's reads without timestamp ordering (what :class:`TimestampOrder` builds on)."""

    def __init__(self, consumer: RowConsumer) -> None:
        self._c = consumer

    def consume(self, num_messages: int, timeout: float) -> list:
        return BaseConsumer.consume(self._c, num_messages, timeout)

    def position(self, partitions: List[TopicPartition]) -> List[TopicPartition]:
        return BaseConsumer.position(self._c, partitions)

    def subscribe(self, topics: List[str], on_assign: Optional[Callable] = None,
                  on_revoke: Optional[Callable] = None, on_lost: Optional[Callable] = None) -> None:
        BaseConsumer.subscribe(self._c, topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: Optional[float] = None,
                              cached: bool = False) -> tuple:
        return self._c.get_watermark_offsets(partition, timeout=timeout, cached=cached)

    def committed(self, partitions: List[TopicPartition], timeout: Optional[float] = None) -> List[TopicPartition]:
        return self._c.committed(partitions, timeout=timeout)

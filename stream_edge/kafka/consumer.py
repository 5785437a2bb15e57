"""Consumer: a thin wrapper around confluent_kafka.Consumer with sensible defaults."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Union

import confluent_kafka
from confluent_kafka import TopicPartition

from .availability import AvailabilityChecks, BrokerAvailability
from .configuration import ConnectionConfig, connection_dict
from .exceptions import client_error_logger

__all__ = ("BaseConsumer", "Consumer", "AutoOffsetReset", "PREFETCH_DEFAULTS")

logger = logging.getLogger("stream_edge")
AutoOffsetReset = str  # "earliest" | "latest" | "error"


_default_error_cb = client_error_logger("consumer")

#: Quix Streams 3.28's defaults for its Consumer (extra_config overrides them): offsets are stored
#: only by store_offsets(), which librdkafka refuses (_INVALID_ARG) while it stores them itself.
CLIENT_DEFAULTS: Dict[str, Any] = {"enable.auto.offset.store": False, "partition.assignment.strategy": "range"}

#: librdkafka's prefetch, bounded for a light edge (any key of ``extra_config`` overrides it).
#: librdkafka's defaults queue up to 64 MiB of fetched messages (~200 MB of RSS for small JSON
#: records, measured in bench/README.md, lake_ingest); 2 MiB with a 10 ms back-off when the queue
#: is full (default 1 s, which starves a small queue) keeps the same consume rate.
PREFETCH_DEFAULTS: Dict[str, Any] = {"queued.max.messages.kbytes": 2048, "fetch.queue.backoff.ms": 10}


def _default_group() -> str:
    """The one consumer-group default (``stream_edge.app_config``; imported here, not at module
    level, because ``app_config`` imports this package)."""
    from stream_edge.app_config import DEFAULT_CONSUMER_GROUP

    return DEFAULT_CONSUMER_GROUP


class BaseConsumer(AvailabilityChecks):
    """Consume from Kafka (the client is created on first use).

    Example::

        with Consumer("localhost:9092", "group", "earliest") as consumer:
            consumer.subscribe(["topic"])
            msg = consumer.poll(1.0)
    """

    #: False: after close(), calls raise RuntimeError("Consumer closed"); True: the next call opens
    #: a new client.
    reopen_after_close = False

    def __init__(self, broker_address: Union[str, ConnectionConfig], consumer_group: Optional[str],
                 auto_offset_reset: AutoOffsetReset, auto_commit_enable: bool = True,
                 logger: logging.Logger = logger,
                 error_callback: Callable[[confluent_kafka.KafkaError], None] = _default_error_cb,
                 on_commit: Optional[Callable] = None, extra_config: Optional[dict] = None) -> None:
        self._availability = BrokerAvailability()
        config = {
            **CLIENT_DEFAULTS,
            **PREFETCH_DEFAULTS,
            **(extra_config or {}),
            **connection_dict(broker_address),
            "group.id": consumer_group or _default_group(),
            "auto.offset.reset": auto_offset_reset,
            "enable.auto.commit": auto_commit_enable,
            "error_cb": self._availability.wrap(error_callback),
        }
        if on_commit is not None:
            config["on_commit"] = on_commit
        self._config = config
        self._inner: Optional[confluent_kafka.Consumer] = None
        self._closed_unopened = False

    @property
    def _consumer(self) -> confluent_kafka.Consumer:
        if self._inner is None:
            if self._closed_unopened:  # closed before its first use: no client to tell us
                raise RuntimeError("Consumer closed")
            self._inner = confluent_kafka.Consumer(self._config)
        return self._inner

    def poll(self, timeout: Optional[float] = None):
        return self._consumer.poll(-1 if timeout is None else timeout)

    def consume(self, num_messages: int = 1, timeout: Optional[float] = None) -> list:
        messages = self._consumer.consume(num_messages, -1 if timeout is None else timeout)
        if messages and self._availability.down_since is not None:
            self._availability.reachable()
        return messages

    def _client(self) -> confluent_kafka.Consumer:
        return self._consumer

    def subscribe(self, topics: List[str], on_assign: Optional[Callable] = None,
                  on_revoke: Optional[Callable] = None, on_lost: Optional[Callable] = None) -> None:
        kwargs = {k: v for k, v in (("on_assign", on_assign), ("on_revoke", on_revoke), ("on_lost", on_lost)) if v}
        self._consumer.subscribe(list(topics), **kwargs)

    def unsubscribe(self) -> None:
        self._consumer.unsubscribe()

    def store_offsets(self, message: Any = None, offsets: Optional[List[TopicPartition]] = None) -> None:
        """Store a message's offset + 1, or the given offsets, for the next (auto) commit; exactly
        one of ``message`` and ``offsets`` (``ValueError`` worded as 3.28.1 otherwise)."""
        _one_of(message, offsets, required=True)
        if message is not None:
            self._consumer.store_offsets(message=message)
        else:
            self._consumer.store_offsets(offsets=offsets)

    def commit(self, message: Any = None, offsets: Optional[List[TopicPartition]] = None,
               asynchronous: bool = True) -> Optional[List[TopicPartition]]:
        """Commit a message's offset + 1, the given offsets, or (neither) the assignment's positions."""
        _one_of(message, offsets, required=False)
        kwargs: Dict[str, Any] = {"asynchronous": asynchronous}
        if message is not None:
            kwargs["message"] = message
        elif offsets is not None:
            kwargs["offsets"] = offsets
        result: Optional[List[TopicPartition]] = self._consumer.commit(**kwargs)
        return result

    def committed(self, partitions: List[TopicPartition], timeout: Optional[float] = None) -> List[TopicPartition]:
        return self._consumer.committed(partitions, timeout=-1 if timeout is None else timeout)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: Optional[float] = None,
                              cached: bool = False):
        return self._consumer.get_watermark_offsets(partition, timeout=-1 if timeout is None else timeout,
                                                    cached=cached)

    def list_topics(self, topic: Optional[str] = None, timeout: Optional[float] = None):
        return self._consumer.list_topics(topic, timeout=-1 if timeout is None else timeout)

    def memberid(self) -> Optional[str]:
        return self._consumer.memberid()

    def offsets_for_times(self, partitions: List[TopicPartition], timeout: Optional[float] = None):
        return self._consumer.offsets_for_times(partitions, timeout=-1 if timeout is None else timeout)

    def pause(self, partitions: List[TopicPartition]) -> None:
        self._consumer.pause(partitions)

    def resume(self, partitions: List[TopicPartition]) -> None:
        self._consumer.resume(partitions)

    def position(self, partitions: List[TopicPartition]) -> List[TopicPartition]:
        return self._consumer.position(partitions)

    def seek(self, partition: TopicPartition) -> None:
        self._consumer.seek(partition)

    def assignment(self) -> List[TopicPartition]:
        return self._consumer.assignment()

    def set_sasl_credentials(self, username: str, password: str) -> None:
        self._consumer.set_sasl_credentials(username, password)

    def incremental_assign(self, partitions: List[TopicPartition]) -> None:
        self._consumer.incremental_assign(partitions)

    def assign(self, partitions: List[TopicPartition]) -> None:
        self._consumer.assign(partitions)

    def incremental_unassign(self, partitions: List[TopicPartition]) -> None:
        self._consumer.incremental_unassign(partitions)

    def unassign(self) -> None:
        self._consumer.unassign()

    def consumer_group_metadata(self) -> Any:
        return self._consumer.consumer_group_metadata()

    def close(self) -> None:
        """Leave the group (committing stored offsets with auto-commit on). Later calls raise
        confluent-kafka's ``RuntimeError("Consumer closed")``, as on 3.28.1, unless the class
        reopens after a close (the Application's consumer, reused by each ``run()``)."""
        if self._inner is not None:
            self._inner.close()
            if self.reopen_after_close:
                self._inner = None
        elif not self.reopen_after_close:
            self._closed_unopened = True

    def __enter__(self) -> "BaseConsumer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


Consumer = BaseConsumer


def _one_of(message: Any, offsets: Any, required: bool) -> None:
    """The argument check of ``store_offsets`` / ``commit``, with 3.28.1's messages."""
    if message is not None and offsets is not None:
        raise ValueError('Parameters "message" and "offsets" are mutually exclusive')
    if required and message is None and offsets is None:
        raise ValueError('One of "message" or "offsets" must be passed')

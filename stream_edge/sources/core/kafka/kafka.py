"""KafkaReplicatorSource: copy a topic from another Kafka cluster into the application's broker.

Where the copy has got to is kept on the application's (destination) cluster, as Quix Streams 3.28
keeps it: consumer group ``[<consumer_group_prefix>-]source-<name>-offsets``, offsets stored under
the destination topic's name and partition (source offset + 1, after the copies are delivered).
When the source cluster assigns partitions, each one starts at that stored offset (the
``auto_offset_reset`` of the source applies where none is stored).
"""

from __future__ import annotations

import logging
import time
from typing import Any, Dict, List, Optional, Union

from confluent_kafka import TopicPartition

from stream_edge.error_callbacks import ConsumerErrorCallback, default_on_consumer_error
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.consumer import BaseConsumer
from stream_edge.kafka.exceptions import KafkaConsumerException
from stream_edge.models.topics import Topic, TopicConfig
from stream_edge.models.topics.admin import TopicAdmin
from stream_edge.sources.base.source import ClientConnectFailureCallback, ClientConnectSuccessCallback, Source

__all__ = ("KafkaReplicatorSource",)

logger = logging.getLogger("stream_edge")
BATCH = 500  # messages taken from the source cluster per consume() call


class KafkaReplicatorSource(Source):
    """Replicate ``topic`` from ``broker_address`` (same partition, key, value, headers, timestamp).

    ``setup()`` checks both topics first: ``ValueError`` when the source or destination topic is
    missing or the source has more partitions than the destination (the messages are worded as in
    Quix Streams 3.28). Offsets are committed on the destination cluster every
    ``commit_interval`` seconds / ``commit_every`` messages of the application's config, after the
    copies are delivered (at-least-once).

    Example::

        source = KafkaReplicatorSource(name="mirror", app_config=app.config, topic="remote-topic",
                                       broker_address="other-cluster:9092", auto_offset_reset="earliest")
        sdf = app.dataframe(source=source)
    """

    def __init__(self, name: str, app_config: Any, topic: str, broker_address: Union[str, ConnectionConfig],
                 auto_offset_reset: Optional[str] = "latest", consumer_extra_config: Optional[dict] = None,
                 consumer_poll_timeout: Optional[float] = None, shutdown_timeout: float = 10,
                 on_consumer_error: ConsumerErrorCallback = default_on_consumer_error,
                 value_deserializer: Any = "json", key_deserializer: Any = "bytes",
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
                 commit_interval: Optional[float] = None) -> None:
        super().__init__(name=name, shutdown_timeout=shutdown_timeout,
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)
        self._config = app_config
        self._source_topic = topic
        self._broker_address = broker_address
        self._auto_offset_reset: str = auto_offset_reset or app_config.auto_offset_reset
        self._consumer_extra_config = dict(consumer_extra_config or {})
        self._poll_timeout: float = consumer_poll_timeout or app_config.consumer_poll_timeout
        # An edge extension; by default the application's commit_interval, as in Quix.
        self._commit_interval: float = commit_interval or app_config.commit_interval
        self._on_consumer_error = on_consumer_error
        self._value_deserializer = value_deserializer
        self._key_deserializer = key_deserializer
        self._source_consumer: Optional[BaseConsumer] = None
        self._target_consumer: Optional[BaseConsumer] = None
        self._pending: Dict[int, int] = {}  # source partition -> last offset copied, not yet committed
        self._copied_since_commit = 0
        self._last_commit = time.monotonic()
        self._failed = False

    @property
    def source_consumer_group(self) -> str:
        """The group on the source cluster (its offsets there are not used)."""
        return f"source-{self.name}"

    @property
    def target_consumer_group(self) -> str:
        """The group on the destination cluster that keeps the replication's offsets."""
        group = f"source-{self.name}-offsets"
        prefix = getattr(self._config, "consumer_group_prefix", "")
        return f"{prefix}-{group}" if prefix else group

    def default_topic(self) -> Topic:
        """A topic named after the source with the source topic's configuration (partitions,
        replication factor and every setting, as Quix Streams 3.28 copies them); one partition
        when the source topic is not found."""
        admin = TopicAdmin(self._broker_address, extra_config=self._consumer_extra_config)
        try:
            config = admin.inspect_topics([self._source_topic], timeout=self._config.request_timeout).get(
                self._source_topic)
        finally:
            admin.close()
        if config is None:
            config = TopicConfig(num_partitions=1, replication_factor=1)
        return Topic(name=self.name, create_config=config, value_deserializer=self._value_deserializer,
                     key_deserializer=self._key_deserializer, value_serializer="bytes", key_serializer="bytes")

    def setup(self) -> None:
        """Create the clients, check both topics, subscribe to the source topic."""
        logger.info('Starting the source "%s": source topic "%s", offsets in group "%s" of the destination '
                    "cluster, commit_interval=%ss commit_every=%s", self.name, self._source_topic,
                    self.target_consumer_group, self._commit_interval, self._config.commit_every)
        self._source_consumer = BaseConsumer(self._broker_address, self.source_consumer_group,
                                             self._auto_offset_reset, auto_commit_enable=False,
                                             extra_config=self._consumer_extra_config)
        self._target_consumer = BaseConsumer(self._config.broker_address, self.target_consumer_group,
                                             self._config.auto_offset_reset, auto_commit_enable=False,
                                             extra_config=self._config.consumer_extra_config)
        self._check_topics()
        self._source_consumer.subscribe([self._source_topic], on_assign=self._on_assign,
                                        on_revoke=self._on_revoke)

    def _check_topics(self) -> None:
        """Both topics exist; the destination has at least the source's partitions."""
        timeout = self._config.request_timeout
        destination = self._configured_topic().name
        found = self._inspect(self._broker_address, self._consumer_extra_config, self._source_topic, timeout)
        if found is None:
            raise ValueError(f"Source topic {self._source_topic} not found")
        target = self._inspect(self._config.broker_address, self._config.consumer_extra_config, destination, timeout)
        if target is None:
            raise ValueError(f"Destination topic {destination} not found")
        if found.num_partitions is None or target.num_partitions is None:
            return
        if found.num_partitions > target.num_partitions:
            raise ValueError("Source topic has more partitions than destination topic")
        if found.num_partitions < target.num_partitions:
            logger.warning("Source topic has less partitions than destination topic")

    @staticmethod
    def _inspect(broker_address: Any, extra_config: dict, name: str, timeout: float) -> Optional[TopicConfig]:
        admin = TopicAdmin(broker_address, extra_config=extra_config)
        try:
            return admin.inspect_topics([name], timeout=timeout).get(name)
        finally:
            admin.close()

    def _on_assign(self, consumer: Any, partitions: List[TopicPartition]) -> None:
        """Start each assigned partition at the offset stored on the destination cluster."""
        assert self._target_consumer is not None and self._source_consumer is not None  # setup() made them
        destination = self._configured_topic().name
        stored = self._target_consumer.committed([TopicPartition(destination, p.partition) for p in partitions],
                                                 timeout=self._config.request_timeout)
        offsets = {tp.partition: tp.offset for tp in stored}
        for partition in partitions:
            partition.offset = offsets.get(partition.partition, partition.offset)
            logger.debug("using offset %s for topic partition %s[%s]", partition.offset, partition.topic,
                         partition.partition)
        self._source_consumer.assign(partitions)

    def _on_revoke(self, consumer: Any, partitions: List[TopicPartition]) -> None:
        if not self._failed:
            self._commit()

    def run(self) -> None:
        assert self._source_consumer is not None  # setup() ran in the source's process
        destination = self._configured_topic().name
        self._last_commit = time.monotonic()
        while self.running:
            self._producer.poll(0)
            for msg in self._source_consumer.consume(BATCH, self._poll_timeout):
                error = msg.error()
                if error is not None:
                    exc = KafkaConsumerException(error, msg.topic(), msg.partition())
                    if self._on_consumer_error(exc, msg, logger):
                        continue
                    raise exc
                self._producer.produce(destination, value=msg.value(), key=msg.key(), headers=msg.headers(),
                                       partition=msg.partition(), timestamp=msg.timestamp()[1])
                self._pending[msg.partition()] = msg.offset()
                self._copied_since_commit += 1
            if self._commit_due():
                self._commit()

    def _commit_due(self) -> bool:
        every = self._config.commit_every
        return bool(self._pending) and (time.monotonic() - self._last_commit >= self._commit_interval
                                        or (every > 0 and self._copied_since_commit >= every))

    def _commit(self) -> None:
        """Deliver the copies, then store the next offsets on the destination cluster."""
        self._last_commit, self._copied_since_commit = time.monotonic(), 0
        if not self._pending:
            return
        self._producer.flush(self._config.flush_timeout)
        destination = self._configured_topic().name
        offsets = [TopicPartition(destination, partition, offset + 1) for partition, offset in self._pending.items()]
        assert self._target_consumer is not None
        result = self._target_consumer.commit(offsets=offsets, asynchronous=False) or []
        failed = [tp for tp in result if tp.error]
        if failed:
            raise RuntimeError(f"could not commit the replication offsets {failed}")
        self._pending = {}

    def cleanup(self, failed: bool) -> None:
        """Commit what was copied (unless the run failed), then close both consumers."""
        self._failed = failed
        try:
            if not failed:
                self._commit()
        finally:
            for consumer in (self._source_consumer, self._target_consumer):
                if consumer is not None:
                    consumer.close()

"""KafkaReplicatorSource: copy a topic from another Kafka cluster into the application's broker."""

from __future__ import annotations

import logging
import time
from typing import Any, Optional, Union

from confluent_kafka import TopicPartition

from stream_edge.error_callbacks import ConsumerErrorCallback, default_on_consumer_error
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.consumer import BaseConsumer
from stream_edge.models.topics import Topic, TopicConfig
from stream_edge.sources.base.source import Source

__all__ = ("KafkaReplicatorSource",)

logger = logging.getLogger("stream_edge")


class KafkaReplicatorSource(Source):
    """Replicate ``topic`` from ``broker_address`` (same partition, key, value, headers, timestamp).

    Offsets on the source cluster are committed only after the copies are delivered, so a restart
    neither skips nor loses messages (at-least-once).

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
                 commit_interval: Optional[float] = None) -> None:
        super().__init__(name=name, shutdown_timeout=shutdown_timeout)
        self._app_config = app_config
        self._source_topic = topic
        self._broker_address = broker_address
        self._auto_offset_reset: str = auto_offset_reset or getattr(app_config, "auto_offset_reset", None) or "latest"
        self._consumer_extra_config = consumer_extra_config or {}
        self._poll_timeout = consumer_poll_timeout or getattr(app_config, "consumer_poll_timeout", 1.0)
        self._commit_interval: float = commit_interval or getattr(app_config, "commit_interval", None) or 5.0
        self._on_consumer_error = on_consumer_error
        self._value_deserializer = value_deserializer
        self._key_deserializer = key_deserializer
        self._consumer: Optional[BaseConsumer] = None

    def default_topic(self) -> Topic:
        """A topic named after the source with the source topic's configuration (partitions,
        replication factor and every setting, as Quix Streams 3.28 copies them); one partition
        when the source topic is not found."""
        from stream_edge.models.topics.admin import TopicAdmin

        admin = TopicAdmin(self._broker_address, extra_config=self._consumer_extra_config)
        try:
            config = admin.inspect_topics([self._source_topic],
                                          timeout=getattr(self._app_config, "request_timeout", 30)).get(self._source_topic)
        finally:
            admin.close()
        if config is None:
            config = TopicConfig(num_partitions=1, replication_factor=1)
        return Topic(name=self.name, create_config=config, value_deserializer=self._value_deserializer,
                     key_deserializer=self._key_deserializer, value_serializer="bytes", key_serializer="bytes")

    def run(self) -> None:
        consumer = BaseConsumer(self._broker_address, f"source-{self.name}", self._auto_offset_reset,
                                auto_commit_enable=False,
                                extra_config={"enable.auto.offset.store": False, **self._consumer_extra_config})
        self._consumer = consumer
        topic = self._configured_topic()
        target = topic.name
        partitions = (topic.config.num_partitions if topic.config else 1) or 1
        consumer.subscribe([self._source_topic])
        pending: dict = {}
        last_commit = time.monotonic()
        try:
            while self.running:
                for msg in consumer.consume(500, self._poll_timeout):
                    if msg.error() is not None:
                        if not self._on_consumer_error(Exception(msg.error().str()), msg, logger):
                            raise RuntimeError(f"source consumer error: {msg.error().str()}")
                        continue
                    partition = msg.partition() if msg.partition() < partitions else None
                    self._producer.produce(target, value=msg.value(), key=msg.key(), headers=msg.headers(),
                                           partition=partition, timestamp=msg.timestamp()[1])
                    pending[(msg.topic(), msg.partition())] = msg.offset()
                if pending and time.monotonic() - last_commit >= self._commit_interval:
                    self._commit(pending)
                    pending, last_commit = {}, time.monotonic()
            if pending:
                self._commit(pending)
        finally:
            consumer.close()

    def _commit(self, pending: dict) -> None:
        """Deliver the copies first, then commit the source offsets."""
        self._producer.flush()
        assert self._consumer is not None  # run() created it
        self._consumer.commit(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in pending.items()],
                              asynchronous=False)

    def cleanup(self, failed: bool) -> None:
        if not failed:
            self._producer.flush()

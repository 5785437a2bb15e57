"""Producer: a thin wrapper around confluent_kafka.Producer with sensible defaults.

The underlying client is created on first use, so creating an Application opens no connection.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any, Callable, List, Optional, Union

import confluent_kafka

from .availability import AvailabilityChecks, BrokerAvailability
from .configuration import ConnectionConfig, connection_dict
from .exceptions import InvalidProducerConfigError, client_error_logger

__all__ = ("Producer", "TransactionalProducer", "PRODUCER_ON_ERROR_RETRIES", "PRODUCER_POLL_TIMEOUT")

logger = logging.getLogger("stream_edge")

PRODUCER_ON_ERROR_RETRIES = 10
PRODUCER_POLL_TIMEOUT = 30.0


_default_error_cb = client_error_logger("producer")


class Producer(AvailabilityChecks):
    """Produce to Kafka.

    Example::

        with Producer("localhost:9092") as producer:
            producer.produce("topic", value=b"v", key=b"k")
    """

    def __init__(self, broker_address: Union[str, ConnectionConfig], logger: logging.Logger = logger,
                 error_callback: Callable[[confluent_kafka.KafkaError], None] = _default_error_cb,
                 extra_config: Optional[dict] = None, flush_timeout: Optional[float] = None,
                 transactional: bool = False) -> None:
        self._availability = BrokerAvailability()
        extra_config = dict(extra_config or {})
        if transactional:
            # Quix 3.x: a random transactional.id unless extra_config names one.
            extra_config.setdefault("transactional.id", str(uuid.uuid4()))
            extra_config.setdefault("enable.idempotence", True)
        self._transactional = transactional or "transactional.id" in extra_config
        self._init_on_connect = transactional  # Quix's transactional=True: init_transactions() with the client
        config = {
            # Throughput defaults: batch for a few ms and compress; values are small JSON.
            "linger.ms": 10,
            "compression.type": "lz4",
            "partitioner": "murmur2_random",  # same partitions as the Java client for a given key
            **(extra_config or {}),
            **connection_dict(broker_address),
            "error_cb": self._availability.wrap(error_callback),
        }
        self._config = config
        self._flush_timeout = flush_timeout
        self._inner: Optional[confluent_kafka.Producer] = None

    @property
    def _producer(self) -> confluent_kafka.Producer:
        if self._inner is None:
            self._inner = confluent_kafka.Producer(self._config)
            if self._init_on_connect:
                self._inner.init_transactions()
        return self._inner

    @property
    def transactional(self) -> bool:
        """True when the producer uses Kafka transactions (``transactional=True``)."""
        return self._transactional

    def _client(self) -> confluent_kafka.Producer:
        return self._producer

    def enable_statistics(self, interval_ms: int, callback: Callable[[str], None]) -> bool:
        """Have librdkafka call ``callback(json_text)`` every ``interval_ms`` (from ``poll``/``flush``).

        Only before the client connects (its configuration is fixed then); returns False when it is
        too late or the user's ``extra_config`` already set ``stats_cb``.
        """
        if self._inner is not None or "stats_cb" in self._config:
            return False
        self._config["statistics.interval.ms"] = interval_ms
        self._config["stats_cb"] = callback
        return True

    def purge(self) -> None:
        """Drop the messages queued or in flight (their delivery reports carry purge errors)."""
        if self._inner is not None:
            self._inner.purge()

    @property
    def raw(self) -> confluent_kafka.Producer:
        """The confluent-kafka client itself: generated ``to_topic()`` code calls its ``produce``
        directly, one C call per record."""
        return self._producer

    def produce(self, topic: str, value: Any = None, key: Any = None, headers: Any = None,
                partition: Optional[int] = None, timestamp: Optional[int] = None, poll_timeout: float = 5.0,
                buffer_error_max_tries: int = 3, on_delivery: Optional[Callable] = None) -> None:
        """Produce one message; on a full local queue, poll and retry."""
        kwargs: dict = {"value": value, "key": key}
        if headers is not None:
            kwargs["headers"] = headers
        if partition is not None:
            kwargs["partition"] = partition
        if timestamp is not None:
            kwargs["timestamp"] = timestamp
        if on_delivery is not None:
            kwargs["on_delivery"] = on_delivery
        producer = self._producer
        for attempt in range(buffer_error_max_tries + 1):
            try:
                producer.produce(topic, **kwargs)
                return
            except BufferError:
                if attempt == buffer_error_max_tries:
                    raise
                producer.poll(poll_timeout)

    def poll(self, timeout: float = 0) -> int:
        """Serve delivery callbacks."""
        return self._producer.poll(timeout)

    def flush(self, timeout: Optional[float] = None) -> int:
        """Wait for all messages to be delivered; returns how many are left."""
        if self._inner is None:
            return 0
        if timeout is None:
            timeout = self._flush_timeout if self._flush_timeout is not None else -1
        return self._inner.flush(timeout)

    def __len__(self) -> int:
        return 0 if self._inner is None else len(self._inner)

    def __enter__(self) -> "Producer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Deliver what is queued, then release the client (see :meth:`release`)."""
        if self._inner is not None:
            self.flush()
            self.release()

    def release(self) -> None:
        """Drop the librdkafka client now (it stops reconnecting, e.g. once the broker is gone)
        instead of whenever garbage collection gets to it; using the producer again creates a
        new client."""
        self._inner = None

    # transactions (a plain Producer has none; TransactionalProducer overrides)
    def _ensure_transactional(self) -> None:
        if not self._transactional:
            raise InvalidProducerConfigError(
                "Producer must be initialized with `transactional=True` to use Kafka Transactions API")

    def init_transactions(self, timeout: float = -1) -> None:
        self._ensure_transactional()
        if self._init_on_connect and self._inner is None:
            self._producer  # noqa: B018 - creating the client initialises the transactions
            return
        if not self._init_on_connect:
            self._producer.init_transactions(timeout)

    def begin_transaction(self) -> None:
        self._ensure_transactional()
        self._producer.begin_transaction()

    def send_offsets_to_transaction(self, positions: List[confluent_kafka.TopicPartition],
                                    group_metadata: Any, timeout: float = -1) -> None:
        self._ensure_transactional()
        self._producer.send_offsets_to_transaction(positions, group_metadata, timeout)

    def commit_transaction(self, timeout: float = -1) -> None:
        self._ensure_transactional()
        self._producer.commit_transaction(timeout)

    def abort_transaction(self, timeout: float = -1) -> None:
        self._ensure_transactional()
        self._producer.abort_transaction(timeout)


class TransactionalProducer(Producer):
    """A producer with Kafka transactions enabled (exactly-once)."""

    def __init__(self, broker_address: Union[str, ConnectionConfig], transactional_id: str,
                 logger: logging.Logger = logger,
                 error_callback: Callable[[confluent_kafka.KafkaError], None] = _default_error_cb,
                 extra_config: Optional[dict] = None, flush_timeout: Optional[float] = None,
                 transaction_timeout_ms: int = 10000) -> None:
        # A killed instance's open transaction blocks read_committed readers until it times out
        # (a new instance fences it at once only if it reuses the same transactional.id), so the
        # timeout is kept short; both can be overridden through extra_config.
        extra = {"transactional.id": transactional_id, "enable.idempotence": True,
                 "transaction.timeout.ms": transaction_timeout_ms, **(extra_config or {})}
        super().__init__(broker_address, logger=logger, error_callback=error_callback, extra_config=extra,
                         flush_timeout=flush_timeout)

"""RowProducer: serializes records per Topic and produces them; owns producer error handling.

The hot path is :meth:`RowProducer.topic_writer`: a closure per ``to_topic()`` built when the
pipeline is composed, calling confluent-kafka's ``produce`` directly with the topic's one-argument
serializers. Delivery reports come back only for failures (``delivery.report.only.error``), so a
successful message costs no Python callback; failures are collected and raised at the next
``flush()``, i.e. before any offset is committed.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Tuple, Union

import confluent_kafka

from stream_edge.error_callbacks import ProducerErrorCallback, default_on_producer_error
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.producer import Producer, TransactionalProducer
from stream_edge.models.messagecontext import MessageContext
from stream_edge.models.rows import Row
from stream_edge.models.topics import Topic
from stream_edge.models.topics.utils import merge_headers

__all__ = ("RowProducer", "ProducerError")

logger = logging.getLogger("stream_edge")
_KEY_UNSET = object()


class ProducerError(Exception):
    """Producing failed and ``on_producer_error`` did not ignore it; processing stops."""


class RowProducer:
    """Produce records to Topics with their serializers.

    Example::

        producer = RowProducer("localhost:9092")
        producer.produce_row(Row({"a": 1}, b"k", 0, None), topic)
        producer.flush()
    """

    def __init__(self, broker_address: Union[str, ConnectionConfig], extra_config: Optional[dict] = None,
                 on_error: Optional[ProducerErrorCallback] = None, flush_timeout: Optional[float] = None,
                 transactional: bool = False, transactional_id: Optional[str] = None) -> None:
        config = {
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
            # A deep local queue: the loop polls once per batch, not per message.
            "queue.buffering.max.messages": 1_000_000,
            **(extra_config or {}),
        }
        if transactional:
            self._producer: Producer = TransactionalProducer(
                broker_address, transactional_id=transactional_id or "stream-edge", extra_config=config,
                flush_timeout=flush_timeout)
        else:
            self._producer = Producer(broker_address, extra_config=config, flush_timeout=flush_timeout)
        self._on_error = on_error or default_on_producer_error
        self._transactional = transactional
        self._in_transaction = False
        self._transactions_initialized = False
        self._delivery_errors: List[Exception] = []
        self.processing_context: Any = None  # set by the Application: names the input record on errors

    # -- errors -------------------------------------------------------------------------------
    def _on_delivery(self, err: Optional[confluent_kafka.KafkaError], msg: Any) -> None:
        if err is not None:
            self._delivery_errors.append(confluent_kafka.KafkaException(
                f"delivery to topic '{msg.topic()}' failed: {err.str()}"))

    def _current_row(self, value: Any, key: Any, timestamp: Any, headers: Any) -> Row:
        ctx = self.processing_context
        msg = getattr(ctx, "current_message", None)
        mctx = None
        if msg is not None:
            mctx = MessageContext(msg.topic(), msg.partition(), msg.offset())
        return Row(value, key, timestamp, mctx, headers)

    def handle_error(self, exc: Exception, row: Optional[Row]) -> None:
        """Pass the error to on_producer_error; raise ProducerError unless it returns True."""
        if self._on_error(exc, row, logger):
            return
        where = (f" while processing topic '{row.topic}' partition {row.partition} offset {row.offset}"
                 if row is not None and row.context is not None else "")
        raise ProducerError(f"failed to produce a message{where}: {exc}") from exc

    def _raise_delivery_errors(self) -> None:
        errors, self._delivery_errors = self._delivery_errors, []
        for exc in errors:
            self.handle_error(exc, None)

    # -- hot path -------------------------------------------------------------------------------
    def topic_writer(self, topic: Topic, key: Optional[Callable[[Any], Any]] = None) -> Callable[[Any, Any, int, Any], None]:
        """A closure ``(value, key, timestamp, headers)`` producing to ``topic``."""
        return self._writer(topic, key)[0]

    def inline_parts(self, topic: Topic, key: Optional[Callable[[Any], Any]] = None) -> Optional[Tuple[Any, ...]]:
        """``(produce, topic_name, dumps, on_failure)`` when a record can be produced with one line
        ``produce(name, dumps(value), key, timestamp=..., headers=...)`` (JSON-like value
        serializer, key passed through, no extra headers); ``on_failure(value, key, timestamp,
        headers, exc)`` handles a full queue and errors. None otherwise: use :meth:`topic_writer`.
        """
        return self._writer(topic, key)[1]

    def _writer(self, topic: Topic, key: Optional[Callable[[Any], Any]]) -> Tuple[Callable, Optional[Tuple[Any, ...]]]:
        raw = self._producer._producer
        produce, poll = raw.produce, raw.poll
        name = topic.name
        vdump, kdump = topic.value_dumps, topic.key_dumps
        key_func = key
        extra = topic.extra_headers
        handle_error, current_row = self.handle_error, self._current_row

        def serialize(value, msg_key):
            if key_func is not None:
                msg_key = key_func(value)
            if kdump is not None and msg_key is not None:
                msg_key = kdump(msg_key)
            # None goes through the serializer too (JSON: b"null"), as in Quix Streams
            return (vdump(value) if vdump is not None else value), msg_key

        def on_failure(value, msg_key, timestamp, headers, first_exc):
            # Full queue: serve delivery reports and retry; anything else goes to on_producer_error.
            exc = first_exc
            for _ in range(10):
                if not isinstance(exc, BufferError):
                    break
                poll(1.0)
                try:
                    data, out_key = serialize(value, msg_key)
                    produce(name, data, out_key, timestamp=timestamp,
                            headers=merge_headers(headers, extra) if extra else headers)
                    return
                except Exception as retry_exc:  # noqa: BLE001
                    exc = retry_exc
            handle_error(exc, current_row(value, msg_key, timestamp, headers))

        def write(value, msg_key, timestamp, headers):
            try:
                data, out_key = serialize(value, msg_key)
                produce(name, data, out_key, timestamp=timestamp,
                        headers=merge_headers(headers, extra) if extra else headers)
            except Exception as exc:  # noqa: BLE001 - routed to on_producer_error
                on_failure(value, msg_key, timestamp, headers, exc)

        simple = key_func is None and kdump is None and vdump is not None and not extra
        return write, ((produce, name, vdump, on_failure) if simple else None)

    # -- v3 API ---------------------------------------------------------------------------------
    def produce_row(self, row: Row, topic: Topic, key: Any = _KEY_UNSET, partition: Optional[int] = None,
                    timestamp: Optional[int] = None) -> None:
        """Serialize ``row`` with ``topic``'s serializers and produce it."""
        key = row.key if key is _KEY_UNSET else key
        try:
            msg = topic.row_serialize(row, key)
            headers = msg.headers
            if topic.extra_headers:
                headers = merge_headers(headers, topic.extra_headers)
            self.produce(topic.name, msg.value, msg.key, headers=headers, partition=partition,
                         timestamp=timestamp if timestamp is not None else row.timestamp)
        except Exception as exc:  # noqa: BLE001
            self.handle_error(exc, row)

    def produce(self, topic: str, value: Any = None, key: Any = None, headers: Any = None,
                partition: Optional[int] = None, timestamp: Optional[int] = None, poll_timeout: float = 5.0,
                buffer_error_max_tries: int = 3) -> None:
        """Produce raw bytes."""
        self._producer.produce(topic, value=value, key=key, headers=headers, partition=partition,
                               timestamp=timestamp, poll_timeout=poll_timeout,
                               buffer_error_max_tries=buffer_error_max_tries)

    def poll(self, timeout: float = 0) -> None:
        """Serve delivery reports; failed deliveries go to on_producer_error."""
        self._producer.poll(timeout)
        if self._delivery_errors:
            self._raise_delivery_errors()

    def flush(self, timeout: Optional[float] = None) -> int:
        """Deliver everything; raise (via on_producer_error) if a delivery failed."""
        left = self._producer.flush(timeout)
        if self._delivery_errors:
            self._raise_delivery_errors()
        if left:
            raise ProducerError(f"{left} messages were not delivered before the flush timeout")
        return left

    # -- transactions ---------------------------------------------------------------------------
    @property
    def transactional(self) -> bool:
        return self._transactional

    def init_transactions(self, timeout: float = 30) -> None:
        """Register the transactional id with the broker (once per producer; fences older instances)."""
        if not self._transactions_initialized:
            self._producer.init_transactions(timeout)
            self._transactions_initialized = True

    def begin_transaction(self) -> None:
        self._producer.begin_transaction()
        self._in_transaction = True

    def commit_transaction(self, positions: List[confluent_kafka.TopicPartition], group_metadata: Any,
                           timeout: float = 30) -> None:
        """Send the consumer offsets to the transaction and commit it."""
        self._producer.send_offsets_to_transaction(positions, group_metadata, timeout)
        self._producer.commit_transaction(timeout)
        self._in_transaction = False

    def abort_transaction(self, timeout: float = 30) -> None:
        """Abort the open transaction, if there is one."""
        if self._in_transaction:
            self._producer.abort_transaction(timeout)
            self._in_transaction = False

    def __len__(self) -> int:
        return len(self._producer)

"""RowProducer: serializes records per Topic and produces them; owns producer error handling.

The hot path is the generated code of ``to_topic()`` (``stream_edge/core/stream/functions/produce.py``):
built from :meth:`RowProducer.topic_output` when the pipeline is composed, it calls confluent-kafka's
``produce`` directly with the topic's one-argument serializers. Delivery reports come back only for failures (``delivery.report.only.error``), so a
successful message costs no Python callback; failures are collected and raised at the next
``flush()``, i.e. before any offset is committed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Union

import confluent_kafka

from stream_edge.error_callbacks import ProducerErrorCallback, default_on_producer_error
from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.exceptions import client_error_logger
from stream_edge.kafka.producer import Producer, TransactionalProducer
from stream_edge.models.messagecontext import MessageContext
from stream_edge.models.rows import Row
from stream_edge.models.topics import Topic
from stream_edge.models.topics.utils import merge_headers

__all__ = ("RowProducer", "ProducerError", "TopicOutput")

logger = logging.getLogger("stream_edge")
_KEY_UNSET = object()


@dataclass(frozen=True)
class TopicOutput:
    """How the records of one ``to_topic()`` are produced: what its generated code calls.

    ``produce`` is confluent-kafka's own ``Producer.produce`` (no Python wrapper per message);
    ``value_dumps``/``key_dumps`` are the topic's one-argument serializers (None: bytes as given);
    ``key_func`` computes a new message key from the value; ``extra_headers`` are merged into the
    record's headers; ``on_failure(value, key, timestamp, headers, exc, retry)`` handles a raised
    produce call (full queue: retry; else ``on_producer_error``). ``positional``: ``produce`` is
    confluent-kafka's, called with its positional arguments (``topic, value, key, partition,
    on_delivery, callback, timestamp, headers``; -1 and None are its defaults): a keyword call costs
    it ~0.3 us more per record (``bench/loop_cpu.py``); else ``produce(topic, value, key,
    timestamp=..., headers=...)``.
    """

    produce: Callable[..., None]
    topic_name: str
    value_dumps: Optional[Callable[[Any], Any]]
    key_func: Optional[Callable[[Any], Any]]
    key_dumps: Optional[Callable[[Any], Any]]
    extra_headers: Any
    on_failure: Callable[..., None]
    positional: bool = False


_PURGED = {confluent_kafka.KafkaError._PURGE_QUEUE, confluent_kafka.KafkaError._PURGE_INFLIGHT}


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
                 transactional: bool = False, transactional_id: Optional[str] = None,
                 error_callback: Optional[Callable[[confluent_kafka.KafkaError], None]] = None,
                 message_cursor: Any = None) -> None:
        config = {
            "delivery.report.only.error": True,
            "on_delivery": self._on_delivery,
            # A deep local queue: the loop polls once per batch, not per message.
            "queue.buffering.max.messages": 1_000_000,
            **(extra_config or {}),
        }
        on_client_error = error_callback or client_error_logger("producer")
        if transactional:
            self._producer: Producer = TransactionalProducer(
                broker_address, transactional_id=transactional_id or "stream-edge", extra_config=config,
                flush_timeout=flush_timeout, error_callback=on_client_error)
        else:
            self._producer = Producer(broker_address, extra_config=config, flush_timeout=flush_timeout,
                                      error_callback=on_client_error)
        self._on_error = on_error or default_on_producer_error
        self._transactional = transactional
        self._in_transaction = False
        self._transactions_initialized = False
        self._delivery_errors: List[Exception] = []
        self._guarded: Dict[str, Callable[[Any], bool]] = {}  # topic -> resend a too-large message cut
        self._guarded_errors: List[str] = []
        self.max_message_bytes = int(config.get("message.max.bytes", 1_000_000))
        # the Application's MessageCursor (processing/cursor.py): names the input record on errors
        self._cursor = message_cursor

    def enable_statistics(self, interval_ms: int, callback: Callable[[str], None]) -> bool:
        """librdkafka statistics of the underlying producer (see ``Producer.enable_statistics``)."""
        return self._producer.enable_statistics(interval_ms, callback)

    # -- errors -------------------------------------------------------------------------------
    def _on_delivery(self, err: Optional[confluent_kafka.KafkaError], msg: Any) -> None:
        # Purged messages were dropped on purpose: an aborted transaction (its partitions are
        # replayed) or purge(); they are not delivery failures.
        if err is not None and err.code() not in _PURGED:
            guard = self._guarded.get(msg.topic())
            if guard is None:
                self._delivery_errors.append(confluent_kafka.KafkaException(
                    f"delivery to topic '{msg.topic()}' failed: {err.str()}"))
            elif not (err.code() == confluent_kafka.KafkaError.MSG_SIZE_TOO_LARGE and guard(msg)):
                self._guarded_errors.append(f"delivery of a dead letter to topic '{msg.topic()}' failed: {err.str()}")

    def guard_topic(self, topic: str, resend_smaller: Callable[[Any], bool]) -> None:
        """Deliveries to ``topic`` (the dead-letter topic) are never the user's to ignore: a failed
        one fails the checkpoint (nothing is committed, whatever ``on_producer_error`` says), except
        a message the topic finds too large, which ``resend_smaller(msg)`` produces again cut (True)."""
        self._guarded[topic] = resend_smaller

    def _current_row(self, value: Any, key: Any, timestamp: Any, headers: Any) -> Row:
        cursor = self._cursor
        msg = None if cursor is None else cursor.message
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
        guarded, self._guarded_errors = self._guarded_errors, []
        if guarded:
            self._delivery_errors = []
            raise ProducerError(f"{guarded[0]} ({len(guarded)} failed); the offsets are not committed")
        errors, self._delivery_errors = self._delivery_errors, []
        for exc in errors:
            self.handle_error(exc, None)

    # -- hot path -------------------------------------------------------------------------------
    def topic_output(self, topic: Topic, key: Optional[Callable[[Any], Any]] = None) -> TopicOutput:
        """The pieces ``to_topic(topic, key=key)`` is generated from (see :class:`TopicOutput`)."""
        return TopicOutput(produce=self._producer.raw.produce, topic_name=topic.name,
                           value_dumps=topic.value_dumps, key_func=key, key_dumps=topic.key_dumps,
                           extra_headers=topic.extra_headers or None, on_failure=self._on_produce_failure,
                           positional=True)

    def _on_produce_failure(self, value: Any, key: Any, timestamp: int, headers: Any, exc: Exception,
                            retry: Callable[[Any, Any, int, Any], None]) -> None:
        """A produce call raised: on a full queue serve delivery reports and ``retry`` (up to 10
        times); anything else goes to ``on_producer_error`` with the input record named."""
        for _ in range(10):
            if not isinstance(exc, BufferError):
                break
            self._producer.raw.poll(1.0)
            try:
                retry(value, key, timestamp, headers)
                return
            except Exception as retry_exc:  # noqa: BLE001
                exc = retry_exc
        self.handle_error(exc, self._current_row(value, key, timestamp, headers))

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

    def raise_if_broker_unavailable(self, timeout: float) -> None:
        """See :meth:`stream_edge.kafka.producer.Producer.raise_if_broker_unavailable`."""
        self._producer.raise_if_broker_unavailable(timeout)

    def poll(self, timeout: float = 0) -> None:
        """Serve delivery reports; failed deliveries go to on_producer_error."""
        self._producer.poll(timeout)
        if self._delivery_errors or self._guarded_errors:
            self._raise_delivery_errors()

    def release(self) -> None:
        """Drop the underlying client (after a run: flushed or aborted already)."""
        self._producer.release()

    def flush(self, timeout: Optional[float] = None) -> int:
        """Deliver everything; raise (via on_producer_error) if a delivery failed."""
        left = self._producer.flush(timeout)
        if self._delivery_errors or self._guarded_errors:
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

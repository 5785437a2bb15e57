"""The per-message hot path: one handler closure per input topic, one loop per batch.

Built once when the Application starts. Per message the loop does: an error check, one store of
the raw message into the ProcessingContext, the topic's deserializer (one C call for JSON), and one
call of the topic's composed executor. No Row or context object is created unless an error callback
or a metadata-reading function asks for one.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, List, Optional, Tuple

from confluent_kafka import KafkaError

from stream_edge.kafka.exceptions import KafkaConsumerException
from stream_edge.models.messagecontext import MessageContext
from stream_edge.models.rows import Row
from stream_edge.models.serializers import IgnoreMessage, SerializationError
from stream_edge.models.timestamps import TimestampType
from stream_edge.models.topics import Topic
from stream_edge.rowproducer import ProducerError

__all__ = ("build_handler", "build_batch_processor", "last_offsets", "first_offsets", "ConsumerError")

logger = logging.getLogger("stream_edge")
_SKIP = object()


class _NoCount:
    count = 0


_NEVER = _NoCount()  # the counter of runs without run(count=...)


class ConsumerError(Exception):
    """Consuming or deserializing failed and on_consumer_error did not ignore it."""


def _where(msg: Any) -> str:
    return f"topic '{msg.topic()}' partition {msg.partition()} offset {msg.offset()}"


def _context(msg: Any) -> MessageContext:
    raw = msg.value()
    return MessageContext(msg.topic(), msg.partition(), msg.offset(), len(raw) if raw is not None else 0,
                          msg.leader_epoch())


def build_handler(topic: Topic, executor: Callable[[Any, Any, int, Any], None], ctx: Any,
                  on_consumer_error: Callable, on_processing_error: Callable) -> Callable[[Any], None]:
    """The closure processing one raw message of ``topic``."""
    vloads, kloads = topic.value_loads, topic.key_loads
    extractor = topic.timestamp_extractor
    split = topic.split_values

    def consumer_failed(exc: Exception, msg: Any, field: str) -> Any:
        """Deserialization failed: skip (IgnoreMessage or callback says so) or raise with coordinates."""
        if isinstance(exc, IgnoreMessage):
            return _SKIP
        error = SerializationError(f"cannot deserialize the message {field} at {_where(msg)}: "
                                   f"{type(exc).__name__}: {exc}")
        error.__cause__ = exc
        if on_consumer_error(error, msg, logger):
            return _SKIP
        raise ConsumerError(str(error)) from exc

    def processing_failed(exc: Exception, value: Any, key: Any, ts: Any, headers: Any, msg: Any) -> None:
        if isinstance(exc, (ProducerError, ConsumerError)):
            raise exc
        if on_processing_error(exc, Row(value, key, ts, _context(msg), headers), logger):
            return
        logger.error("processing failed at %s", _where(msg))
        raise exc

    def handle_general(msg: Any) -> None:
        ctx.current_message = msg
        value = msg.value()
        if vloads is not None and value is not None:
            try:
                value = vloads(value)
            except Exception as exc:  # noqa: BLE001
                if consumer_failed(exc, msg, "value") is _SKIP:
                    return
        key = msg.key()
        if kloads is not None and key is not None:
            try:
                key = kloads(key)
            except Exception as exc:  # noqa: BLE001
                if consumer_failed(exc, msg, "key") is _SKIP:
                    return
        ts_type, ts = msg.timestamp()
        headers = msg.headers()
        try:
            if extractor is not None:
                ts = extractor(value, headers, ts, TimestampType(ts_type))
            if split:
                for item in value:
                    executor(item, key, ts, headers)
            else:
                executor(value, key, ts, headers)
        except Exception as exc:  # noqa: BLE001
            processing_failed(exc, value, key, ts, headers, msg)

    if kloads is not None or extractor is not None or split or vloads is None:
        return handle_general

    def handle(msg: Any) -> None:
        # The common case (deserialized value, raw key): the same steps as handle_general, inlined.
        ctx.current_message = msg
        try:
            value = vloads(msg.value())
        except Exception:  # noqa: BLE001 - tombstones and bad input take the general path
            return handle_general(msg)
        try:
            executor(value, msg.key(), msg.timestamp()[1], msg.headers())
        except Exception as exc:  # noqa: BLE001
            processing_failed(exc, value, msg.key(), msg.timestamp()[1], msg.headers(), msg)

    # The batch loop inlines ``handle`` for a single topic; these are the parts it needs.
    handle.inline_parts = (ctx, vloads, executor, handle_general, processing_failed)  # type: ignore[attr-defined]
    return handle


def _message_error(msg: Any, on_consumer_error: Callable) -> None:
    err = msg.error()
    if err.code() == KafkaError._PARTITION_EOF:  # informational (enable.partition.eof)
        return
    exc = KafkaConsumerException(err, msg.topic(), msg.partition())
    if not on_consumer_error(exc, msg, logger):
        raise ConsumerError(str(exc)) from exc


def build_batch_processor(handlers: Dict[str, Callable[[Any], None]], on_consumer_error: Callable,
                          on_message_processed: Optional[Callable] = None,
                          stop_at: Optional[Tuple[Any, int]] = None) -> Callable[[List[Any]], int]:
    """``process(messages) -> how many were processed``.

    ``stop_at=(counter, n)`` stops right after the message that brings ``counter.count`` to ``n``
    (``run(count=n)``), so later messages of the batch stay unprocessed and uncommitted.
    """
    single = next(iter(handlers.values())) if len(handlers) == 1 else None
    parts = getattr(single, "inline_parts", None)
    if parts is not None and on_message_processed is None:
        ctx, vloads, executor, handle_general, processing_failed = parts
        counter, limit = stop_at if stop_at is not None else (_NEVER, float("inf"))

        def process_inline(msgs: List[Any]) -> int:
            # build_handler's ``handle``, inlined: saves one Python call per message.
            done = 0
            for msg in msgs:
                done += 1
                if msg.error() is None:
                    ctx.current_message = msg
                    try:
                        value = vloads(msg.value())
                    except Exception:  # noqa: BLE001 - tombstones and bad input take the general path
                        handle_general(msg)
                        continue
                    try:
                        executor(value, msg.key(), msg.timestamp()[1], msg.headers())
                    except Exception as exc:  # noqa: BLE001
                        processing_failed(exc, value, msg.key(), msg.timestamp()[1], msg.headers(), msg)
                    if counter.count >= limit:  # run(count=...): stop right after the n-th output
                        break
                else:
                    _message_error(msg, on_consumer_error)
            return done
        return process_inline

    if single is not None and on_message_processed is None and stop_at is None:
        def process_single(msgs: List[Any]) -> int:
            for msg in msgs:
                if msg.error() is None:
                    single(msg)
                else:
                    _message_error(msg, on_consumer_error)
            return len(msgs)
        return process_single

    def process(msgs: List[Any]) -> int:
        done = 0
        for msg in msgs:
            done += 1
            if msg.error() is not None:
                _message_error(msg, on_consumer_error)
                continue
            handlers[msg.topic()](msg)
            if on_message_processed is not None:
                on_message_processed(msg.topic(), msg.partition(), msg.offset())
            if stop_at is not None and stop_at[0].count >= stop_at[1]:
                break
        return done
    return process


def _first_seen(msgs: List[Any], indices: range, wanted: int) -> Dict[Tuple[str, int], int]:
    """The offset of the first message seen per topic-partition, visiting ``msgs`` in ``indices``
    order; stops once ``wanted`` partitions are found."""
    found: Dict[Tuple[str, int], int] = {}
    for i in indices:
        msg = msgs[i]
        if msg.error() is None:
            tp = (msg.topic(), msg.partition())
            if tp not in found:
                found[tp] = msg.offset()
                if len(found) >= wanted:
                    break
    return found


def last_offsets(msgs: List[Any], count: int, partitions_hint: int) -> Dict[Tuple[str, int], int]:
    """The last offset per topic-partition among ``msgs[:count]`` (scans backwards, stops early)."""
    return _first_seen(msgs, range(count - 1, -1, -1), partitions_hint)


def first_offsets(msgs: List[Any], count: int, wanted: int) -> Dict[Tuple[str, int], int]:
    """The first offset per topic-partition among ``msgs[:count]``."""
    return _first_seen(msgs, range(count), wanted)

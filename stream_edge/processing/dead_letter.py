"""DeadLetterTopic: where a record that cannot be deserialized, processed or written to a sink goes.

Like Kafka Connect's ``errors.deadletterqueue.*``: the record is produced with its ORIGINAL key
and value bytes, its original timestamp and headers, and these headers added::

    __stream_edge.errors.stage                    b"deserialization" | b"processing"
    __stream_edge.errors.topic                    the source topic
    __stream_edge.errors.partition                its partition (decimal text)
    __stream_edge.errors.offset                   its offset (decimal text)
    __stream_edge.errors.exception.class.name     e.g. b"SchemaConflictError" (module-qualified)
    __stream_edge.errors.exception.message        the exception's text (UTF-8, at most 4 KiB)

It is produced by the application's own producer, inside the checkpoint being built: the record's
offset is committed only after the dead letter is delivered (at-least-once), or in the same Kafka
transaction (exactly-once), so an aborted checkpoint takes its dead letters with it.

Who decides (``decide``): the error callback runs first. True (skip) sends the record to the dead-letter
topic and the stream goes on; False stops the app with the error. With no callback of the user's,
every failing record goes to the dead-letter topic, logged at WARNING with its coordinates: the
first five of each minute one line each, the others counted in one line (see ``LogBudget``).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any, Callable, List, Optional, Tuple, Union

from confluent_kafka import KafkaError, KafkaException

from stream_edge.logging import mask_secrets
from stream_edge.models.types import RawConfluentKafkaMessageProto as RawMessage
from stream_edge.processing.log_budget import LogBudget

__all__ = ("DeadLetterTopic", "HEADER_PREFIX", "STAGE_DESERIALIZATION", "STAGE_PROCESSING", "error_headers")

logger = logging.getLogger("stream_edge")

HEADER_PREFIX = "__stream_edge.errors."
STAGE_DESERIALIZATION = "deserialization"
STAGE_PROCESSING = "processing"  # the pipeline's functions and a sink's add(), which runs inside it
MESSAGE_LIMIT = 4096  # bytes of the exception text kept in the header
ENVELOPE_BYTES = 1024  # what a record batch and a message add around a dead letter's key, value, headers
DEFAULT_MAX_BYTES = 1_000_000  # librdkafka's message.max.bytes default


def _class_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _text(value: str, limit: int = MESSAGE_LIMIT) -> bytes:
    """``value`` with secrets masked, as UTF-8 of at most ``limit`` bytes cut on a character
    boundary (never half a character).

    >>> _text("é" * 3, 5)
    b'\\xc3\\xa9\\xc3\\xa9'
    """
    data = mask_secrets(value).encode("utf-8", "replace")
    if len(data) > limit:
        data = data[:limit].decode("utf-8", "ignore").encode("utf-8")
    return data


def error_headers(msg: RawMessage, exc: BaseException, stage: str) -> List[Tuple[str, bytes]]:
    """The headers naming where ``msg`` came from and why it failed (appended to its own); every
    value has its secrets masked (``stream_edge.logging.mask_secrets``).

    >>> from confluent_kafka import Message
    >>> hdrs = dict(error_headers(Message(topic="t", partition=1, offset=7), ValueError("bad"), "processing"))
    >>> hdrs["__stream_edge.errors.offset"], hdrs["__stream_edge.errors.exception.class.name"]
    (b'7', b'ValueError')
    """
    return [
        (HEADER_PREFIX + "stage", stage.encode()),
        (HEADER_PREFIX + "topic", _text(msg.topic() or "")),
        (HEADER_PREFIX + "partition", str(msg.partition()).encode()),
        (HEADER_PREFIX + "offset", str(msg.offset()).encode()),
        (HEADER_PREFIX + "exception.class.name", _text(_class_name(exc))),
        (HEADER_PREFIX + "exception.message", _text(str(exc))),
    ]


Bytes = Union[bytes, str, None]  # what a raw message holds (str only from a test's Message)


def _size(value: Bytes, key: Bytes, headers: List[Tuple[str, bytes]]) -> int:
    return (len(value or b"") + len(key or b"") + ENVELOPE_BYTES
            + sum(len(name) + len(data or b"") + 8 for name, data in headers))


def _cut_headers(value: Union[bytes, str]) -> List[Tuple[str, bytes]]:
    if isinstance(value, str):
        value = value.encode()
    return [(HEADER_PREFIX + "value.truncated", b"true"),
            (HEADER_PREFIX + "value.original.size", str(len(value)).encode()),
            (HEADER_PREFIX + "value.sha256", hashlib.sha256(value).hexdigest().encode())]


def fit(value: Bytes, key: Bytes, headers: List[Tuple[str, bytes]],
        max_bytes: int) -> Tuple[Bytes, List[Tuple[str, bytes]]]:
    """The dead letter's value and headers cut to fit ``max_bytes`` (the producer's
    ``message.max.bytes``): a value too large is cut, and headers say so (its original size, the
    SHA-256 of the original bytes). A dead letter that fits is returned as is.

    >>> value, headers = fit(b"x" * 100, None, [], 600)
    >>> len(value) < 100, dict(headers)["__stream_edge.errors.value.original.size"]
    (True, b'100')
    """
    if value is None or _size(value, key, headers) <= max_bytes:
        return value, headers
    headers = headers + _cut_headers(value)
    room = max(0, max_bytes - _size(b"", key, headers))
    return value[:room], headers


class DeadLetterTopic:
    """Sends failing records to one topic; see the module docstring for the headers and the rules.

    ``produce(topic, value=, key=, headers=, timestamp=)`` is the application's producer's raw
    produce (``RowProducer.produce``); ``on_consumer_error`` / ``on_processing_error`` are the
    user's callbacks, or None when the user set none.

    Example::

        dlq = DeadLetterTopic("orders-dlq", producer.produce, None, None)
        if dlq.processing_failed(exc, row, msg):   # True: dead-lettered, go on
            ...
    """

    def __init__(self, name: str, produce: Callable[..., None], on_consumer_error: Optional[Callable[..., bool]],
                 on_processing_error: Optional[Callable[..., bool]]) -> None:
        if not name:
            raise ValueError("dead_letter_topic must be a topic name")
        self.name = name
        self._produce = produce
        self._on_consumer_error = on_consumer_error
        self._on_processing_error = on_processing_error
        self.sent = 0  # dead letters produced by this run (delivered at the checkpoint)
        self.max_bytes = DEFAULT_MAX_BYTES  # the producer's message.max.bytes (the runner sets it)
        # called after each dead letter with its stage and error (the runner reports it to the
        # run observers: metrics, the summary log); None: nobody watches
        self.on_sent: Optional[Callable[[str, BaseException], None]] = None
        self._log_budget = LogBudget(first=5, period=60.0)  # a burst of bad records: a few lines, then counts

    def deserialization_failed(self, exc: Exception, msg: RawMessage) -> bool:
        """True if ``msg`` went to the dead-letter topic (the stream goes on); False: stop."""
        return self._decide(self._on_consumer_error, exc, msg, msg, STAGE_DESERIALIZATION)

    def processing_failed(self, exc: Exception, row: Any, msg: RawMessage) -> bool:
        """True if ``msg`` went to the dead-letter topic (the stream goes on); False: stop."""
        return self._decide(self._on_processing_error, exc, row, msg, STAGE_PROCESSING)

    @property
    def has_processing_callback(self) -> bool:
        return self._on_processing_error is not None

    @property
    def has_consumer_callback(self) -> bool:
        return self._on_consumer_error is not None

    def approves_processing(self, exc: Exception, row: Any, msg: RawMessage) -> bool:
        """Whether a failing record is to be dead-lettered (the callback's answer, True without
        one), without sending it: under exactly-once the runner sends it when it replays the
        aborted checkpoint, before the record runs."""
        return self._approves(self._on_processing_error, exc, row, msg, STAGE_PROCESSING)

    def _approves(self, callback: Optional[Callable[..., bool]], exc: Exception, subject: Any, msg: RawMessage,
                  stage: str) -> bool:
        if callback is not None:
            return bool(callback(exc, subject, logger))
        if not self._log_budget.allow():
            return True
        self.report_unlogged()
        logger.warning("%s failed at topic '%s' partition %s offset %s (%s: %s): sent to the dead-letter "
                       "topic '%s'", stage, msg.topic(), msg.partition(), msg.offset(), type(exc).__name__,
                       mask_secrets(str(exc)), self.name)
        return True

    def report_unlogged(self) -> None:
        """Log how many dead letters went without a line of their own since the last report (the
        runner calls it when the run stops, so a burst's tail is never left unsaid)."""
        unlogged = self._log_budget.take_pending()
        if unlogged:
            logger.warning("%d more records were sent to the dead-letter topic '%s' without a line of their own "
                           "(each carries its topic, partition, offset and error in its headers)", unlogged, self.name)

    def _decide(self, callback: Optional[Callable[..., bool]], exc: Exception, subject: Any, msg: RawMessage,
                stage: str) -> bool:
        if not self._approves(callback, exc, subject, msg, stage):
            return False
        self.send(msg, exc, stage)
        return True

    def send(self, msg: RawMessage, exc: BaseException, stage: str) -> None:
        """Produce ``msg`` as it was read (key, value, timestamp, headers) plus the error headers;
        a value too large for the producer is cut to fit (see :func:`fit`), never refused."""
        original = list(msg.headers() or ())
        original.extend(error_headers(msg, exc, stage))
        kind, timestamp = msg.timestamp()
        key = msg.key()
        value, headers = fit(msg.value(), key, original, self.max_bytes)
        stamp = timestamp if kind and timestamp >= 0 else None
        try:
            self._produce(self.name, value=value, key=key, headers=headers, timestamp=stamp)
        except KafkaException as error:
            code = error.args[0].code() if error.args and isinstance(error.args[0], KafkaError) else None
            if code != KafkaError.MSG_SIZE_TOO_LARGE or not value:
                raise
            # the record's own headers or key are what is too large: the value goes entirely
            value, headers = fit(msg.value(), key, original, 0)
            self._produce(self.name, value=value, key=key, headers=headers, timestamp=stamp)
        self.sent += 1
        if self.on_sent is not None:
            self.on_sent(stage, exc)

    def resend_smaller(self, delivered: Any) -> bool:
        """A dead letter the topic found too large (its ``max.message.bytes`` is below the
        producer's): produce it again without its value, with the size and SHA-256 headers
        (called from the producer's delivery report). False when it has no value to cut."""
        value = delivered.value()
        if not value:
            return False
        headers = list(delivered.headers() or ())
        if not any(name == HEADER_PREFIX + "value.original.size" for name, _ in headers):
            headers.extend(_cut_headers(value))
        kind, timestamp = delivered.timestamp()
        logger.warning("a dead letter of %d bytes was too large for topic '%s': sent again without its value",
                       len(value), self.name)
        self._produce(self.name, value=b"", key=delivered.key(), headers=headers,
                      timestamp=timestamp if kind and timestamp >= 0 else None)
        return True

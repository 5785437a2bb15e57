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
every failing record goes to the dead-letter topic (logged at WARNING with its coordinates).
"""

from __future__ import annotations

import logging
from typing import Any, Callable, List, Optional, Tuple

from stream_edge.models.types import RawConfluentKafkaMessageProto as RawMessage

__all__ = ("DeadLetterTopic", "HEADER_PREFIX", "STAGE_DESERIALIZATION", "STAGE_PROCESSING", "error_headers")

logger = logging.getLogger("stream_edge")

HEADER_PREFIX = "__stream_edge.errors."
STAGE_DESERIALIZATION = "deserialization"
STAGE_PROCESSING = "processing"  # the pipeline's functions and a sink's add(), which runs inside it
MESSAGE_LIMIT = 4096  # bytes of the exception text kept in the header


def _class_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def error_headers(msg: RawMessage, exc: BaseException, stage: str) -> List[Tuple[str, bytes]]:
    """The headers naming where ``msg`` came from and why it failed (appended to its own).

    >>> from confluent_kafka import Message
    >>> hdrs = dict(error_headers(Message(topic="t", partition=1, offset=7), ValueError("bad"), "processing"))
    >>> hdrs["__stream_edge.errors.offset"], hdrs["__stream_edge.errors.exception.class.name"]
    (b'7', b'ValueError')
    """
    return [
        (HEADER_PREFIX + "stage", stage.encode()),
        (HEADER_PREFIX + "topic", (msg.topic() or "").encode()),
        (HEADER_PREFIX + "partition", str(msg.partition()).encode()),
        (HEADER_PREFIX + "offset", str(msg.offset()).encode()),
        (HEADER_PREFIX + "exception.class.name", _class_name(exc).encode()),
        (HEADER_PREFIX + "exception.message", str(exc).encode("utf-8", "replace")[:MESSAGE_LIMIT]),
    ]


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
        # called after each dead letter with its stage and error (the runner reports it to the
        # run observers: metrics, the summary log); None: nobody watches
        self.on_sent: Optional[Callable[[str, BaseException], None]] = None

    def deserialization_failed(self, exc: Exception, msg: RawMessage) -> bool:
        """True if ``msg`` went to the dead-letter topic (the stream goes on); False: stop."""
        return self._decide(self._on_consumer_error, exc, msg, msg, STAGE_DESERIALIZATION)

    def processing_failed(self, exc: Exception, row: Any, msg: RawMessage) -> bool:
        """True if ``msg`` went to the dead-letter topic (the stream goes on); False: stop."""
        return self._decide(self._on_processing_error, exc, row, msg, STAGE_PROCESSING)

    def _decide(self, callback: Optional[Callable[..., bool]], exc: Exception, subject: Any, msg: RawMessage,
                stage: str) -> bool:
        if callback is not None:
            if not callback(exc, subject, logger):
                return False
        else:
            logger.warning("%s failed at topic '%s' partition %s offset %s (%s: %s): sent to the dead-letter "
                           "topic '%s'", stage, msg.topic(), msg.partition(), msg.offset(), type(exc).__name__,
                           exc, self.name)
        self.send(msg, exc, stage)
        return True

    def send(self, msg: RawMessage, exc: BaseException, stage: str) -> None:
        """Produce ``msg`` as it was read (key, value, timestamp, headers) plus the error headers."""
        headers = list(msg.headers() or ())
        headers.extend(error_headers(msg, exc, stage))
        kind, timestamp = msg.timestamp()
        self._produce(self.name, value=msg.value(), key=msg.key(), headers=headers,
                      timestamp=timestamp if kind and timestamp >= 0 else None)
        self.sent += 1
        if self.on_sent is not None:
            self.on_sent(stage, exc)

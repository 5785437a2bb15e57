"""The per-message path: ONE loop over a consumed batch, for every topic and every mode.

Per message the loop does: an error check, one store of the raw message into the
ProcessingContext, the topic's deserializers (one C call for JSON), the timestamp extractor if the
topic has one, and one call of the topic's composed executor (the generated chain of operators,
see ``stream_edge/core/stream``). No Row or context object is created unless an error callback or a
metadata-reading function asks for one.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

from confluent_kafka import KafkaError

from stream_edge.core.stream import VoidExecutor
from stream_edge.error_callbacks import (ConsumerErrorCallback, ProcessingErrorCallback, default_on_consumer_error,
                                         default_on_processing_error)
from stream_edge.errors import OUTAGE, PERMANENT, error_kind
from stream_edge.kafka.exceptions import KafkaConsumerException
from stream_edge.models.messagecontext import MessageContext
from stream_edge.models.rows import Row
from stream_edge.models.serializers import IgnoreMessage, SerializationError
from stream_edge.models.timestamps import TimestampExtractor, TimestampType
from stream_edge.models.topics import Topic
from stream_edge.models.types import RawConfluentKafkaMessageProto as RawMessage
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.dead_letter import STAGE_DESERIALIZATION, STAGE_PROCESSING, DeadLetterTopic
from stream_edge.processing.inline_batch import LoopHooks, compile_batch, inlinable_lines
from stream_edge.rowproducer import ProducerError

__all__ = ("TopicRoute", "BatchProcessor", "OutputCounter", "last_offsets", "first_offsets", "ConsumerError",
           "Interruption")

logger = logging.getLogger("stream_edge")
TopicPartitionKey = Tuple[str, int]


class ConsumerError(Exception):
    """Consuming or deserializing failed and on_consumer_error did not ignore it."""


class Interruption(Exception):
    """Why the loop stopped a batch before ``msg`` (the runner rewinds and resumes there).

    ``replay`` False: an outage (``exc``): the record is retried after a backoff. ``replay`` True:
    under exactly-once, the record is to be dead-lettered (or skipped) with no partial effect:
    the checkpoint is aborted and replayed, and the record is skipped before it runs.
    """

    def __init__(self, exc: BaseException, msg: RawMessage, stage: str, replay: bool, row: Optional[int] = None) -> None:
        super().__init__(str(exc))
        self.exc = exc
        self.msg = msg
        self.stage = stage
        self.replay = replay
        self.row = row  # the failing row of a message split into rows (None: the whole message)


class OutputCounter:
    """Counts the records reaching the end of the pipeline; ``run(count=n)`` stops at ``limit``."""

    def __init__(self, limit: float = float("inf")) -> None:
        self.count = 0
        self.limit = limit


class TopicRoute(NamedTuple):
    """What the loop needs to process one topic's raw messages (a tuple: one unpack per message)."""

    value_loads: Optional[Callable[[bytes], Any]]
    key_loads: Optional[Callable[[bytes], Any]]
    timestamp_extractor: Optional[TimestampExtractor]
    split_values: bool
    executor: VoidExecutor

    @classmethod
    def of(cls, topic: Topic, executor: VoidExecutor) -> "TopicRoute":
        return cls(topic.value_loads, topic.key_loads, topic.timestamp_extractor, topic.split_values, executor)


def _where(msg: RawMessage) -> str:
    return f"topic '{msg.topic()}' partition {msg.partition()} offset {msg.offset()}"


def _context(msg: RawMessage) -> MessageContext:
    raw = msg.value()
    return MessageContext(msg.topic(), msg.partition(), msg.offset(), len(raw) if raw is not None else 0,
                          msg.leader_epoch())


class BatchProcessor:
    """``processor(messages) -> how many were processed``: the one per-message loop.

    ``counter`` (``run(count=n)``) stops the batch right after the message that brings
    ``counter.count`` to ``counter.limit``, so later messages stay unprocessed and uncommitted.

    Example::

        process = BatchProcessor({"in": TopicRoute.of(topic, executor)}, ctx, on_consumer_error,
                                 on_processing_error)
        done = process(consumer.consume(1000, 0.1))
    """

    def __init__(self, routes: Mapping[str, TopicRoute], ctx: ProcessingContext,
                 on_consumer_error: ConsumerErrorCallback, on_processing_error: ProcessingErrorCallback,
                 on_message_processed: Optional[Callable[[str, int, int], None]] = None,
                 counter: Optional[OutputCounter] = None,
                 on_failed_message: Optional[Callable[[BaseException], None]] = None,
                 dead_letter: Optional[DeadLetterTopic] = None, exactly_once: bool = False) -> None:
        self._routes = dict(routes)
        self._cursor = ctx.cursor  # owned by this loop while it runs (processing/cursor.py)
        self._on_consumer_error = on_consumer_error
        self._on_processing_error = on_processing_error
        self._on_message_processed = on_message_processed
        self._counter = counter if counter is not None else OutputCounter()
        self._on_failed_message = on_failed_message
        self._dead_letter = dead_letter
        # Did the user give a callback? Without one, an outage is retried and a permanent fault
        # stops the app (stream_edge/errors.py); with one, the callback decides.
        if dead_letter is not None:
            self._user_processing = dead_letter.has_processing_callback
            self._user_consumer = dead_letter.has_consumer_callback
        else:
            self._user_processing = on_processing_error is not default_on_processing_error
            self._user_consumer = on_consumer_error is not default_on_consumer_error
        self.exactly_once = exactly_once
        # (topic, partition, offset) -> {row index (None: the whole message): (error, stage)}:
        # records to skip (dead-letter) before they run, when the runner replays an aborted
        # checkpoint (exactly-once)
        self.skip: Dict[Tuple[str, int, int], Dict[Optional[int], Tuple[BaseException, str]]] = {}
        self._skip_rows: Dict[Optional[int], Tuple[BaseException, str]] = {}  # of the message being split
        self._row = -1  # the index of the row being processed, in a split message
        self.interruption: Optional[Interruption] = None  # why the last batch stopped early
        # the common route's loop with its chain inlined (processing/inline_batch.py), if it can be
        self._inlined: Optional[Callable[[Sequence[RawMessage]], int]] = None
        self._inlined_counted = self._counter.limit != float("inf")
        if len(self._routes) == 1 and on_message_processed is None:
            vloads, kloads, extractor, split, executor = next(iter(self._routes.values()))
            lines = inlinable_lines(executor)
            if vloads is not None and kloads is None and extractor is None and not split and lines is not None:
                hooks = LoopHooks(self._counter, self._cursor, self, self._message_error, self._skipped,
                                  self._deserialize_failed, self._processing_failed, Interruption)
                self._inlined = compile_batch(lines, executor, vloads, hooks, self._inlined_counted)

    def __call__(self, msgs: Sequence[RawMessage]) -> int:
        cursor, routes, counter = self._cursor, self._routes, self._counter
        limit = counter.limit
        processed_cb = self._on_message_processed
        # One topic (the common case): its route is unpacked once per batch, not per message.
        single = len(routes) == 1
        vloads, kloads, extractor, split, executor = next(iter(routes.values()))
        if (single and vloads is not None and kloads is None and extractor is None and not split
                and processed_cb is None):
            return self._plain(msgs, vloads, executor)
        done = 0
        skip = self.skip
        self.interruption = None
        try:
            for msg in msgs:
                done += 1
                if msg.error() is not None:
                    self._message_error(msg)
                    continue
                if skip and self._skipped(msg):
                    continue
                if not single:
                    vloads, kloads, extractor, split, executor = routes[msg.topic()]
                cursor.message = msg  # the one run-time write: operators read the cursor
                value: Any = msg.value()
                if vloads is not None and value is not None:
                    try:
                        value = vloads(value)
                    except Exception as exc:  # noqa: BLE001 - bad input: the callback decides
                        self._deserialize_failed(exc, msg, "value")
                        continue
                key: Any = msg.key()
                if kloads is not None and key is not None:
                    try:
                        key = kloads(key)
                    except Exception as exc:  # noqa: BLE001
                        self._deserialize_failed(exc, msg, "key")
                        continue
                timestamp = msg.timestamp()[1]
                headers = msg.headers()
                if split and value is not None:
                    self._split_rows(value, key, timestamp, headers, msg, extractor, executor)
                else:
                    try:
                        if extractor is not None:
                            timestamp = extractor(value, headers, timestamp, TimestampType(msg.timestamp()[0]))
                        executor(value, key, timestamp, headers)
                    except Exception as exc:  # noqa: BLE001 - the callback decides
                        self._processing_failed(exc, value, key, timestamp, headers, msg)
                if processed_cb is not None:
                    processed_cb(msg.topic(), msg.partition(), msg.offset())
                if counter.count >= limit:  # run(count=...): stop right after the n-th output
                    break
        except Interruption as stop:  # the message is not processed: the runner rewinds to it
            self.interruption = stop
            return done - 1
        return done

    def _plain(self, msgs: Sequence[RawMessage], vloads: Callable[[bytes], Any], executor: VoidExecutor) -> int:
        """:meth:`__call__` for the common route: one topic, a value deserializer, the key as
        bytes, the Kafka timestamp, no split, no per-message callback. The same steps and errors
        as the general loop with the branches that do not apply left out (the per-message path
        is hot: ``bench/loop_cpu.py``). When the topic's chain is a generated one, the loop run
        is a generated copy of this one with the chain's lines inline (``inline_batch.py``)."""
        self.interruption = None
        inlined = self._inlined
        if inlined is not None and self._inlined_counted == (self._counter.limit != float("inf")):
            return inlined(msgs)
        cursor, counter, skip = self._cursor, self._counter, self.skip
        limit = counter.limit
        done = 0
        try:
            for done, msg in enumerate(msgs, 1):
                if msg.error() is not None:
                    self._message_error(msg)
                    continue
                if skip and self._skipped(msg):
                    continue
                cursor.message = msg  # the one run-time write: operators read the cursor
                value: Any = msg.value()
                if value is not None:
                    try:
                        value = vloads(value)
                    except Exception as exc:  # noqa: BLE001 - bad input: the callback decides
                        self._deserialize_failed(exc, msg, "value")
                        continue
                try:
                    executor(value, msg.key(), msg.timestamp()[1], msg.headers())
                except Exception as exc:  # noqa: BLE001 - the callback decides
                    self._processing_failed(exc, value, msg.key(), msg.timestamp()[1], msg.headers(), msg)
                if counter.count >= limit:  # run(count=...): stop right after the n-th output
                    break
        except Interruption as stop:  # the message is not processed: the runner rewinds to it
            self.interruption = stop
            return done - 1
        return done

    def _split_rows(self, value: Any, key: Any, timestamp: Any, headers: Any, msg: RawMessage,
                    extractor: Optional[TimestampExtractor], executor: VoidExecutor) -> None:
        """A message split into rows: each row runs, and fails, on its own (as in Quix 3.28.1)."""
        if extractor is not None:
            # as Topic.row_deserialize and 3.28.1: the extractor sees each item and the timestamp it
            # gave the previous one, every item's before any is processed
            ts_type = TimestampType(msg.timestamp()[0])
            stamped = []
            try:
                for item in value:
                    timestamp = extractor(item, headers, timestamp, ts_type)
                    stamped.append((item, timestamp))
            except Exception as exc:  # noqa: BLE001 - the message's timestamps: one failure
                self._processing_failed(exc, value, key, timestamp, headers, msg)
                return
        else:
            stamped = [(item, timestamp) for item in value]
        skip_rows, self._skip_rows = self._skip_rows, {}
        for row, (item, timestamp) in enumerate(stamped):
            if skip_rows and row in skip_rows:
                self._send(msg, *skip_rows[row])
                continue
            self._row = row
            try:
                executor(item, key, timestamp, headers)
            except Exception as exc:  # noqa: BLE001 - this row's error; the next rows still run
                self._processing_failed(exc, item, key, timestamp, headers, msg)
        self._row = -1

    # -- errors (off the hot path) ----------------------------------------------------------------
    def _message_error(self, msg: RawMessage) -> None:
        err = msg.error()
        if err.code() == KafkaError._PARTITION_EOF:  # informational (enable.partition.eof)
            return
        exc = KafkaConsumerException(err, msg.topic(), msg.partition())
        if not self._on_consumer_error(exc, msg, logger):
            raise ConsumerError(str(exc)) from exc

    def _skipped(self, msg: RawMessage) -> bool:
        """A record an aborted checkpoint's replay skips: dead-lettered (or dropped, as its
        callback said) before it runs, so none of its effects exist. A split message's failing
        rows are skipped one by one (:meth:`_split_rows`)."""
        decided = self.skip.pop((msg.topic(), msg.partition(), msg.offset()), None)
        if decided is None:
            return False
        whole = decided.pop(None, None)
        if whole is None:
            self._skip_rows = decided
            return False
        self._send(msg, *whole)
        return True

    def _send(self, msg: RawMessage, exc: BaseException, stage: str) -> None:
        if self._dead_letter is not None:
            self._dead_letter.send(msg, exc, stage)

    def _outage_or_permanent(self, exc: BaseException, msg: RawMessage, stage: str, user_callback: bool) -> None:
        """Without a user's callback: an outage interrupts the batch (the runner retries the record
        after a backoff), a permanent fault stops the app; with one, the callback decides."""
        if user_callback:
            return
        kind = error_kind(exc)
        if kind == OUTAGE:
            raise Interruption(exc, msg, stage, replay=False)
        if kind == PERMANENT:
            logger.error("%s failed at %s with a fault no retry fixes (%s: %s): stopping (not dead-lettered)",
                         stage, _where(msg), type(exc).__name__, exc)
            raise exc

    def _deserialize_failed(self, exc: Exception, msg: RawMessage, field: str) -> None:
        """Skip the message (IgnoreMessage, or the callback says so) or raise with its coordinates."""
        if isinstance(exc, IgnoreMessage):
            return
        self._outage_or_permanent(exc, msg, STAGE_DESERIALIZATION, self._user_consumer)
        error = SerializationError(f"cannot deserialize the message {field} at {_where(msg)}: "
                                   f"{type(exc).__name__}: {exc}")
        error.__cause__ = exc
        dead_letter = self._dead_letter
        if dead_letter is not None:
            if dead_letter.deserialization_failed(error, msg):
                return
        elif self._on_consumer_error(error, msg, logger):
            return
        raise ConsumerError(str(error)) from exc

    def _row_index(self) -> Optional[int]:
        row, self._row = self._row, -1
        return None if row < 0 else row

    def _processing_failed(self, exc: Exception, value: Any, key: Any, timestamp: Any, headers: Any,
                           msg: RawMessage) -> None:
        if isinstance(exc, (ProducerError, ConsumerError, Interruption)):
            raise exc
        self._outage_or_permanent(exc, msg, STAGE_PROCESSING, self._user_processing)
        if self._on_failed_message is not None:
            self._on_failed_message(exc)
        row = Row(value, key, timestamp, _context(msg), headers)
        dead_letter = self._dead_letter
        if dead_letter is not None:
            if self.exactly_once:
                if dead_letter.approves_processing(exc, row, msg):
                    # its partial effects (outputs, state, sink records) are in this checkpoint:
                    # the runner aborts it and replays it, dead-lettering the record before it runs
                    raise Interruption(exc, msg, STAGE_PROCESSING, replay=True, row=self._row_index())
            elif dead_letter.processing_failed(exc, row, msg):
                return
        elif self._on_processing_error(exc, row, logger):
            if self.exactly_once:
                raise Interruption(exc, msg, STAGE_PROCESSING, replay=True, row=self._row_index())
            return
        logger.error("processing failed at %s", _where(msg))
        raise exc


def _first_seen(msgs: Sequence[RawMessage], indices: range, wanted: int) -> Dict[TopicPartitionKey, int]:
    """The offset of the first message seen per topic-partition, visiting ``msgs`` in ``indices``
    order; stops once ``wanted`` partitions are found."""
    found: Dict[TopicPartitionKey, int] = {}
    for i in indices:
        msg = msgs[i]
        if msg.error() is None:
            tp = (msg.topic(), msg.partition())
            if tp not in found:
                found[tp] = msg.offset()
                if len(found) >= wanted:
                    break
    return found


def last_offsets(msgs: Sequence[RawMessage], count: int, partitions_hint: int) -> Dict[TopicPartitionKey, int]:
    """The last offset per topic-partition among ``msgs[:count]`` (scans backwards, stops early).

    >>> from confluent_kafka import Message
    >>> batch = [Message(topic="t", partition=p, offset=o) for p, o in [(0, 5), (1, 7), (0, 6)]]
    >>> last_offsets(batch, 3, 2)
    {('t', 0): 6, ('t', 1): 7}
    """
    return _first_seen(msgs, range(count - 1, -1, -1), partitions_hint)


def first_offsets(msgs: Sequence[RawMessage], count: int, wanted: int) -> Dict[TopicPartitionKey, int]:
    """The first offset per topic-partition among ``msgs[:count]``."""
    return _first_seen(msgs, range(count), wanted)


def build_routes(topics: Mapping[str, Topic], executors: Mapping[str, VoidExecutor]) -> Dict[str, TopicRoute]:
    """``{topic name: TopicRoute}`` for every composed topic."""
    return {name: TopicRoute.of(topics[name], executor) for name, executor in executors.items()}

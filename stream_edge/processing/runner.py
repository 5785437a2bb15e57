"""Runner: one ``Application.run()``: set-up, the consume/process/checkpoint loop, shutdown.

Loop per iteration: ``consume(n, 0)`` (a whole batch when the fetch queue has one, else block on
``consume(1, poll_timeout)``), process the batch with the one :class:`BatchProcessor`, record the
last offset per partition, poll the producer once, and commit the checkpoint when it is due.
Rebalance callbacks run inside ``consume()``, i.e. between batches, so a revoke always commits a
consistent checkpoint.

The Runner gets every collaborator explicitly (:class:`RunnerParts`); it never reaches into the
Application.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

from confluent_kafka import TopicPartition

from stream_edge.checkpointing import Checkpoint
from stream_edge.error_callbacks import ConsumerErrorCallback, ProcessingErrorCallback
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.collector import OutputCollector, collect_limit_for
from stream_edge.processing.cursor import MessageCursor, activate, deactivate
from stream_edge.processing.dead_letter import DeadLetterTopic
from stream_edge.processing.gc_freeze import StartupFreezer
from stream_edge.processing.loop import BatchProcessor, Interruption, build_routes, first_offsets, last_offsets
from stream_edge.processing.outage import DEFAULT_MAX_RETRY_SECONDS, OutageTracker
from stream_edge.processing.observer import RunObserver
from stream_edge.processing.pausing import PausingManager

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.app_config import ApplicationConfig
    from stream_edge.dataframe.registry import DataframeRegistry
    from stream_edge.rowconsumer import RowConsumer
    from stream_edge.rowproducer import RowProducer
    from stream_edge.models.types import RawConfluentKafkaMessageProto as RawMessage
    from stream_edge.sinks.base.manager import SinkManager
    from stream_edge.sinks.base.sink import BaseSink
    from stream_edge.sources.base.manager import SourceManager
    from stream_edge.state import StateStoreManager

__all__ = ("Runner", "RunnerParts", "RunLimits")

logger = logging.getLogger("stream_edge")
BATCH_SIZE = 1000  # messages per consume() at most
FIRST_BATCH = 10  # until the processing rate is known
BATCH_SECONDS = 0.5  # size batches to take about this long, so slow pipelines still rebalance,
                     # commit and stop promptly (callbacks and checkpoints run between batches)


@dataclass
class RunnerParts:
    """Everything one run works with, handed over by the Application."""

    config: "ApplicationConfig"
    consumer: "RowConsumer"
    producer: "RowProducer"
    registry: "DataframeRegistry"
    context: ProcessingContext
    state_manager: Optional["StateStoreManager"]
    sink_manager: Optional["SinkManager"]
    sources: Optional["SourceManager"]
    on_consumer_error: ConsumerErrorCallback
    on_processing_error: ProcessingErrorCallback
    on_message_processed: Optional[Callable[[str, int, int], None]]
    setup_topics: Callable[[], None]
    observers: Sequence[RunObserver] = field(default_factory=list)
    dead_letter: Optional[DeadLetterTopic] = None  # where failing records go (None: the callbacks decide)
    max_retry_seconds: float = DEFAULT_MAX_RETRY_SECONDS  # how long an outage is retried before stopping


@dataclass(frozen=True)
class RunLimits:
    """``run(timeout=..., count=..., collect=..., metadata=...)``: when to stop, what to return."""

    timeout: float = 0.0
    count: int = 0
    collect: bool = True
    metadata: bool = False
    collect_limit: Optional[int] = None  # outputs kept at most (None: the default; 0: no limit)

    @property
    def bounded(self) -> bool:
        return bool(self.timeout or self.count)


class Runner:
    """Runs an Application until stopped; see :meth:`Application.run`. Implements the
    :class:`~stream_edge.processing.context.CheckpointDriver` seam of the ProcessingContext (which
    asks the Application for its running Runner: the Runner writes nothing into the context)."""

    def __init__(self, parts: RunnerParts, limits: RunLimits = RunLimits()) -> None:
        self._parts = parts
        self._limits = limits
        self._collector = OutputCollector(parts.context.cursor, limits.count, limits.collect, limits.metadata,
                                          collect_limit_for(limits.count, limits.collect_limit)) \
            if limits.bounded else None
        self._stopping = False
        self._failed = False
        self._closing = False
        self._assigned: Set[Tuple[str, int]] = set()
        self._positions: List[TopicPartition] = []  # TopicPartitions of the assignment, for position()
        self._last_activity = time.monotonic()
        self._rebalances = 0  # assign/revoke/lost callbacks so far (positions taken before one are stale)
        self._checkpoint: Optional[Checkpoint] = None
        self._pausing = PausingManager(parts.consumer)
        self._outages = OutageTracker(parts.max_retry_seconds)
        self._commit_now = False  # a replayed checkpoint passed its dead-lettered record: commit it

    def stop(self, fail: bool = False) -> None:
        self._stopping = True
        self._failed = self._failed or fail

    def _notify(self, method: str, *args: Any) -> None:
        for observer in self._parts.observers:
            getattr(observer, method)(*args)

    # -- checkpoints (the CheckpointDriver seam) --------------------------------------------------
    def _new_checkpoint(self) -> Checkpoint:
        parts = self._parts
        cfg = parts.config
        on_sink_flush = self._on_sink_flush if parts.observers else None
        checkpoint = Checkpoint(commit_interval=cfg.commit_interval, commit_every=cfg.commit_every,
                                producer=parts.producer, consumer=parts.consumer,
                                state_manager=parts.state_manager, sink_manager=parts.sink_manager,
                                pausing_manager=self._pausing, exactly_once=cfg.exactly_once,
                                on_sink_flush=on_sink_flush)
        if self._collector is not None:
            self._collector.mark()
        return checkpoint

    def _on_sink_flush(self, sink: "BaseSink", topic: str, partition: int, seconds: float) -> None:
        self._notify("on_sink_flush", sink, topic, partition, seconds)

    def _current(self) -> Checkpoint:
        if self._checkpoint is None:
            raise RuntimeError("no checkpoint: the application is not running")
        return self._checkpoint

    def _commit(self) -> None:
        checkpoint = self._current()
        if checkpoint.empty():
            checkpoint.close()
        else:
            started = time.monotonic()
            offsets = checkpoint.commit()
            self._pausing.committed(offsets)  # a committed partition is no longer blocked
            self._outages.recovered(offsets)
            self._notify("on_checkpoint", time.monotonic() - started, offsets)
        self._checkpoint = self._new_checkpoint()

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``); a new one starts."""
        if force or self._current().expired():
            self._commit()

    def start_checkpoint(self) -> None:
        """Drop the current checkpoint (nothing committed) and start a new one."""
        self._current().close()
        self._checkpoint = self._new_checkpoint()

    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record a processed offset in the current checkpoint."""
        self._current().store_offset(topic, partition, offset)

    # -- rebalancing ----------------------------------------------------------------------------
    def _on_assign(self, consumer: object, partitions: List[TopicPartition]) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        logger.info("partitions assigned: %s", tps)
        self._rebalances += 1
        self._assigned.update(tps)
        self._positions = [TopicPartition(t, p) for t, p in sorted(self._assigned)]
        state = self._parts.state_manager
        if state is not None and partitions:
            committed = self._parts.consumer.committed(partitions, timeout=self._parts.config.request_timeout)
            # stores belong to streams (a concat's stream has several topics): one call with the
            # whole assignment; partitions whose committed offset retention deleted resume elsewhere
            resume = state.assign_partitions([(tp.topic, tp.partition, tp.offset) for tp in committed])
            if resume:
                # Inside on_assign, assign() with explicit offsets replaces the committed positions.
                self._parts.consumer.assign([TopicPartition(p.topic, p.partition,
                                                            resume.get((p.topic, p.partition), p.offset))
                                             for p in partitions])
        self._last_activity = time.monotonic()
        self._notify("on_assign", tps)

    def _forget(self, partitions: List[TopicPartition], lost: bool) -> None:
        parts = self._parts
        tps = [(p.topic, p.partition) for p in partitions]
        self._rebalances += 1
        for tp in tps:
            self._assigned.discard(tp)
        self._positions = [TopicPartition(t, p) for t, p in sorted(self._assigned)]
        for topic, partition in tps:
            self._pausing.revoke(topic, partition)
            self._outages.forget((topic, partition))
            if parts.sink_manager is not None:
                parts.sink_manager.on_revoke(topic, partition)
            if parts.state_manager is not None:
                parts.state_manager.on_partition_revoke(topic, partition)
        self._notify("on_revoke", tps, lost)

    def _on_revoke(self, consumer: object, partitions: List[TopicPartition]) -> None:
        logger.info("partitions revoked: %s", [(p.topic, p.partition) for p in partitions])
        if not self._failed and not self._closing and self._checkpoint is not None:
            self._commit()
        self._forget(partitions, lost=False)

    def _on_lost(self, consumer: object, partitions: List[TopicPartition]) -> None:
        logger.warning("partitions lost: %s", [(p.topic, p.partition) for p in partitions])
        if self._checkpoint is not None:
            self._checkpoint.close()
            self._checkpoint = self._new_checkpoint()
        self._forget(partitions, lost=True)

    # -- signals --------------------------------------------------------------------------------
    def _install_signals(self) -> List[Tuple[int, Any]]:
        if threading.current_thread() is not threading.main_thread():
            return []
        previous: List[Tuple[int, Any]] = []

        def handler(signum: int, frame: Any) -> None:
            logger.info("received %s: stopping after a final checkpoint", signal.Signals(signum).name)
            self._stopping = True

        for sig in (signal.SIGINT, signal.SIGTERM):
            previous.append((sig, signal.signal(sig, handler)))
        return previous

    # -- main -------------------------------------------------------------------------------------
    def run(self) -> List[dict]:
        parts = self._parts
        previous_signals = self._install_signals()
        error: Optional[BaseException] = None
        cursor_token = activate(parts.context.cursor)  # message_context() reads this run's cursor
        try:
            parts.setup_topics()
            if parts.sources is not None:
                parts.sources.start_all()
            if not parts.registry:
                self._wait_for_sources()
                return []
            return self._run_dataframes()
        except BaseException as exc:
            error = exc
            raise
        finally:
            deactivate(cursor_token)
            for sig, handler in previous_signals:
                signal.signal(sig, handler)
            if parts.sources is not None:
                parts.sources.stop_all()
                if error is None:
                    parts.sources.raise_for_error()  # a source that failed while stopping
            self._notify("on_stop", error)

    def _wait_for_sources(self) -> None:
        sources = self._parts.sources
        assert sources is not None
        timeout = self._limits.timeout
        deadline = time.monotonic() + timeout if timeout else None
        if timeout:  # 3.28.1's wording, as for dataframes
            logger.info("APP STOP CONDITIONS SET: timeout=%s seconds", timeout)
        while not self._stopping and sources.alive():
            if deadline is not None and time.monotonic() >= deadline:
                logger.info("Timeout of %ss reached.", timeout)
                break
            sources.raise_for_error()
            time.sleep(0.1)
        sources.raise_for_error()

    def _run_dataframes(self) -> List[dict]:
        parts = self._parts
        ctx, cfg, consumer = parts.context, parts.config, parts.consumer
        collector = self._collector
        executors = parts.registry.compose_all(sink=collector.sink if collector is not None else None)
        topics = {t.name: t for t in parts.registry.consumer_topics}
        on_failed = self._on_failed_message if parts.observers else None
        if parts.dead_letter is not None:
            parts.dead_letter.on_sent = self._on_dead_letter if parts.observers else None
        process = BatchProcessor(build_routes(topics, executors), ctx, parts.on_consumer_error,
                                 parts.on_processing_error, parts.on_message_processed, collector, on_failed,
                                 parts.dead_letter, exactly_once=cfg.exactly_once)
        if parts.dead_letter is not None:  # always deliverable; a failed delivery is never committed
            parts.dead_letter.max_bytes = parts.producer.max_message_bytes
            parts.producer.guard_topic(parts.dead_letter.name, parts.dead_letter.resend_smaller)
        if parts.sink_manager is not None:
            parts.sink_manager.outages = self._outages  # a sink's write meeting an outage backs off

        if parts.sink_manager is not None:
            parts.sink_manager.start_sinks()
        if cfg.exactly_once:
            parts.producer.init_transactions(cfg.request_timeout)
        consumer.subscribe(list(topics.values()), on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)
        self._checkpoint = self._new_checkpoint()
        self._last_activity = time.monotonic()
        logger.info("processing topics %s (consumer group '%s', %s)", sorted(topics), cfg.consumer_group,
                    cfg.processing_guarantee)
        self._notify("on_start", sorted(topics), consumer)
        try:
            self._loop(process)
        except BaseException:
            self._failed = True
            self._shutdown(commit=False)
            raise
        finally:
            StartupFreezer.unfreeze()  # after the run, everything is collectable again
            if parts.dead_letter is not None:
                parts.dead_letter.report_unlogged()  # a burst's tail, counted in one line
        self._shutdown(commit=not self._failed)
        return collector.items if collector is not None else []

    def _on_failed_message(self, exc: BaseException) -> None:
        self._notify("on_processing_error", exc)

    def _on_dead_letter(self, stage: str, exc: BaseException) -> None:
        self._notify("on_dead_letter", stage, exc)

    def _loop(self, process: BatchProcessor) -> None:
        parts = self._parts
        cfg = parts.config
        consumer, producer, pausing, sources = parts.consumer, parts.producer, self._pausing, parts.sources
        broker_timeout = cfg.broker_availability_timeout
        # first offsets: where a backpressured partition rewinds to, and (exactly-once) where an
        # interrupted checkpoint is replayed from
        track_first = bool(parts.sink_manager is not None and parts.sink_manager.sinks) or cfg.exactly_once
        outages = self._outages
        observers = parts.observers
        poll_timeout, producer_poll_timeout = cfg.consumer_poll_timeout, cfg.producer_poll_timeout
        monotonic = time.monotonic
        timeout, count, collector = self._limits.timeout, self._limits.count, self._collector
        if timeout or count:  # 3.28.1's wording of the stop conditions (and of reaching one, below)
            logger.info("APP STOP CONDITIONS SET: %s", " OR ".join(
                ([f"timeout={timeout} seconds"] if timeout else []) + ([f"count={count} records"] if count else [])))
        batch_size = FIRST_BATCH
        freezer = StartupFreezer()
        freezer.freeze()  # what start-up built lives as long as the process (gc_freeze)
        while not self._stopping:
            checkpoint = self._current()
            # Where each partition's next message starts, while this checkpoint still misses
            # first offsets (see _store_batch); one C call instead of a scan of the batch.
            before = (self._position_map() if track_first and checkpoint.starts_known() < len(self._assigned)
                      else None)
            rebalances = self._rebalances
            msgs = consumer.consume(min(batch_size, checkpoint.remaining()), 0)
            if not msgs:
                msgs = consumer.consume(1, poll_timeout if not timeout else min(poll_timeout, timeout))
            if msgs:
                started = monotonic()
                done = process(msgs)
                elapsed = monotonic() - started
                if elapsed > 0:
                    batch_size = max(1, min(BATCH_SIZE, int(done / elapsed * BATCH_SECONDS)))
                checkpoint = self._current()  # a rebalance inside consume() may have replaced it
                if rebalances != self._rebalances:
                    before = None  # positions from before a rebalance: scan the batch instead
                self._store_batch(checkpoint, msgs, done, track_first, before)
                if observers:
                    self._notify("on_batch", msgs, done, elapsed)
                if process.interruption is not None:
                    self._interrupted(process, process.interruption, msgs, done)
                    checkpoint = self._current()
            producer.poll(producer_poll_timeout)
            if checkpoint.expired() or self._commit_now:
                self._commit_now = False
                self._commit()
            if outages.changed and observers:
                outages.changed = False
                self._notify("on_outage_state", outages.service, outages.since)
            freezer.freeze_if_imported()  # a sink's lazy imports (its first write or checkpoint)
            if msgs:  # after the commit, as Quix refreshes it: a slow commit is not idle time
                self._last_activity = monotonic()
            if pausing.paused:
                pausing.resume_if_ready()
            if observers:  # the health heartbeat: once per iteration (a batch or an empty poll)
                self._notify("on_loop", pausing.blocked_since)
            if sources is not None:
                sources.raise_for_error()  # a crashed source stops the app with its error
            if broker_timeout:  # every broker down for too long: stop (the orchestrator restarts us)
                consumer.raise_if_broker_unavailable(broker_timeout)
                producer.raise_if_broker_unavailable(broker_timeout)
            if count and collector is not None and collector.count >= count:
                logger.info("Count of %s records reached.", count)
                break
            # The idle timeout counts only while partitions are assigned ("after the rebalance").
            if timeout and self._assigned and monotonic() - self._last_activity >= timeout:
                logger.info("Timeout of %ss reached.", timeout)
                break

    def _interrupted(self, process: BatchProcessor, stop: Interruption, msgs: Sequence["RawMessage"],
                     done: int) -> None:
        """The batch stopped before ``stop.msg``: rewind so it and what follows are read again.

        An outage pauses the record's partition for a backoff (``OutageTracker``); a record to
        dead-letter under exactly-once is remembered, to be skipped before it runs in the replay.
        At-least-once seeks the partitions with unprocessed messages back to the first of them;
        exactly-once aborts the checkpoint (its outputs, state changes and sink buffers) and
        replays every partition of it from its first offset, so nothing of the record survives.
        """
        parts = self._parts
        msg = stop.msg
        tp = (msg.topic(), msg.partition())
        delay = 0.0
        if stop.replay:
            process.skip.setdefault((tp[0], tp[1], msg.offset()), {})[stop.row] = (stop.exc, stop.stage)
            self._commit_now = True
        else:
            where = f"topic '{tp[0]}' partition {tp[1]} offset {msg.offset()} ({stop.stage})"
            delay = self._outages.failed(tp, stop.exc, where, msg.offset())
            self._notify("on_outage", stop.stage, stop.exc)
        rest = range(done, len(msgs))
        resume = {key: offset for key, offset in first_offsets([msgs[i] for i in rest], len(rest),
                                                               len(self._assigned) or 1).items()}
        if parts.config.exactly_once:
            checkpoint = self._current()
            starts = checkpoint.first_offsets
            unknown = [TopicPartition(t, p) for t, p in checkpoint.partitions if (t, p) not in starts]
            if unknown:  # not expected (first offsets are tracked under exactly-once): the commit
                for known in parts.consumer.committed(unknown, timeout=parts.config.request_timeout):
                    if known.offset >= 0:
                        starts[(known.topic, known.partition)] = known.offset
            for key in checkpoint.partitions:
                if key in starts:
                    resume[key] = starts[key]
            parts.producer.abort_transaction()
            if parts.state_manager is not None:
                parts.state_manager.abort_checkpoint()
            if parts.sink_manager is not None:
                for topic, partition in checkpoint.partitions:
                    parts.sink_manager.on_paused(topic, partition)
            if self._collector is not None:
                self._collector.rewind()  # run()'s outputs: those of the replay, once
            self._checkpoint = self._new_checkpoint()
        consumer = parts.consumer
        for (topic, partition), offset in resume.items():
            if (topic, partition) == tp and delay > 0:
                self._pausing.pause(topic, partition, offset, delay, reason="outage")
            else:
                consumer.seek(TopicPartition(topic, partition, offset))

    def _position_map(self) -> Optional[Dict[Tuple[str, int], int]]:
        """The consumer's position (next offset to return) of every assigned partition that has one."""
        if not self._positions:
            return None
        return {(tp.topic, tp.partition): tp.offset
                for tp in self._parts.consumer.position(self._positions) if tp.offset >= 0}

    def _store_batch(self, checkpoint: Checkpoint, msgs: Sequence["RawMessage"], done: int,
                     track_first: bool, before: Optional[Dict[Tuple[str, int], int]] = None) -> None:
        """Record the batch's processed offsets in the checkpoint.

        ``before``: the positions taken just before ``consume()`` returned this batch (None if
        unknown). A partition whose position moved had its first message of the batch at or after
        its old position, with nothing in between, so the old position is where a replay of this
        batch starts (what the checkpoint's first offsets are for: seeking there returns the same
        message).
        """
        parts_count = len(self._assigned) or 1
        last: Dict[Tuple[str, int], int]
        whole = done == len(msgs) and bool(self._positions)
        if whole:
            # The whole batch is processed: the consumer's position of each partition is
            # "last returned message + 1", one C call instead of a scan of the batch.
            last = {(tp.topic, tp.partition): tp.offset - 1
                    for tp in self._parts.consumer.position(self._positions) if tp.offset >= 0}
        else:
            last = last_offsets(msgs, done, parts_count)
        # First offsets (where a backpressured partition rewinds to) only matter with sinks,
        # and only until every assigned partition has one in this checkpoint.
        first: Dict[Tuple[str, int], int] = {}
        if track_first and checkpoint.starts_known() < parts_count:
            # A position that went back or appeared (a seek resets it) means a seek: scan instead.
            if whole and before is not None and all(tp in before and offset >= before[tp] - 1
                                                    for tp, offset in last.items()):
                first = {tp: before[tp] for tp, offset in last.items() if offset >= before[tp]}
            else:
                first = first_offsets(msgs, done, parts_count)
        checkpoint.store_batch(last, first, done)

    def _shutdown(self, commit: bool) -> None:
        parts = self._parts
        self._closing = True
        try:
            if commit and self._checkpoint is not None:
                self._commit()
                if parts.config.exactly_once:
                    self._current().close()
            else:
                if parts.state_manager is not None:
                    parts.state_manager.abort_checkpoint()
                if parts.config.exactly_once:
                    try:
                        parts.producer.abort_transaction()
                    except Exception as exc:  # noqa: BLE001 - already failing: keep the first error
                        logger.warning("aborting the transaction failed: %s", exc)
        finally:
            try:
                parts.consumer.close()
            finally:
                self._closing = False
                if parts.state_manager is not None:
                    parts.state_manager.close()
                if parts.sink_manager is not None:
                    parts.sink_manager.close()
                if not commit:
                    try:
                        parts.producer.flush(5)
                    except Exception as exc:  # noqa: BLE001 - already failing: keep the first error
                        logger.warning("flushing the producer after a failure failed: %s", exc)

"""Runner: one ``Application.run()``: set-up, the consume/process/checkpoint loop, shutdown.

Loop per iteration: ``consume(n, 0)`` (a whole batch when the fetch queue has one, else block on
``consume(1, poll_timeout)``), process the batch message by message, record the last offset per
partition, poll the producer once, and commit the checkpoint when it is due. Rebalance callbacks run
inside ``consume()``, i.e. between batches, so a revoke always commits a consistent checkpoint.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, List, Optional, Set, Tuple

from confluent_kafka import TopicPartition

from stream_edge.checkpointing import Checkpoint
from stream_edge.processing.loop import build_batch_processor, build_handler, first_offsets, last_offsets
from stream_edge.processing.pausing import PausingManager

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.app import Application

__all__ = ("Runner",)

logger = logging.getLogger("stream_edge")
BATCH_SIZE = 1000  # messages per consume() at most
FIRST_BATCH = 10  # until the processing rate is known
BATCH_SECONDS = 0.5  # size batches to take about this long, so slow pipelines still rebalance,
                     # commit and stop promptly (callbacks and checkpoints run between batches)


class _Collector:
    """Accumulates outputs for ``run(count=..., timeout=...)``."""

    def __init__(self, ctx: Any, collect: bool, metadata: bool) -> None:
        self.items: List[dict] = []
        self.count = 0
        self._ctx, self._metadata = ctx, metadata
        self.sink = self._collect if collect else self._count  # the leaves of the pipeline call this

    def _count(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        self.count += 1

    def _collect(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        self.count += 1
        item = dict(value) if isinstance(value, Mapping) else {"_value": value}
        if self._metadata:
            msg = self._ctx.current_message
            item = {"_key": key, "_timestamp": timestamp, "_headers": headers, "_topic": msg.topic(),
                    "_partition": msg.partition(), "_offset": msg.offset(), **item}
        self.items.append(item)


class Runner:
    """Runs an Application until stopped; see :meth:`Application.run`."""

    def __init__(self, app: "Application", timeout: float = 0.0, count: int = 0, collect: bool = True,
                 metadata: bool = False) -> None:
        self._app = app
        self._timeout = timeout
        self._count = count
        self._bounded = bool(timeout or count)
        self._collector = _Collector(app.processing_context, collect, metadata) if self._bounded else None
        self._stopping = False
        self._failed = False
        self._closing = False
        self._assigned: Set[Tuple[str, int]] = set()
        self._positions: List[Any] = []  # TopicPartitions of the assignment, for position()
        self._last_activity = time.monotonic()
        self._checkpoint: Optional[Checkpoint] = None

    def stop(self, fail: bool = False) -> None:
        self._stopping = True
        self._failed = self._failed or fail

    # -- checkpoints ----------------------------------------------------------------------------
    def _new_checkpoint(self) -> Checkpoint:
        app, ctx = self._app, self._app.processing_context
        cfg = app.config
        checkpoint = Checkpoint(commit_interval=cfg.commit_interval, commit_every=cfg.commit_every,
                                producer=app._producer, consumer=app._consumer,
                                state_manager=ctx._state_manager, sink_manager=ctx.sink_manager,
                                pausing_manager=ctx.pausing_manager, exactly_once=cfg.exactly_once)
        ctx.checkpoint = checkpoint
        return checkpoint

    def _commit(self) -> None:
        checkpoint = self._checkpoint
        if checkpoint.empty():
            checkpoint.close()
        else:
            checkpoint.commit()
        self._checkpoint = self._new_checkpoint()

    def _checkpoint_hook(self, force: bool = False, only_new: bool = False) -> None:
        """ProcessingContext.commit_checkpoint()/init_checkpoint() while running."""
        if only_new:
            self._checkpoint.close()
            self._checkpoint = self._new_checkpoint()
        elif force or self._checkpoint.expired():
            self._commit()

    # -- rebalancing ----------------------------------------------------------------------------
    def _on_assign(self, consumer: Any, partitions: List[Any]) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        logger.info("partitions assigned: %s", tps)
        self._assigned.update(tps)
        self._positions = [TopicPartition(t, p) for t, p in sorted(self._assigned)]
        state = self._app.processing_context._state_manager
        if state is not None and partitions:
            committed = consumer.committed(partitions, timeout=self._app.config.request_timeout)
            for tp in committed:
                state.on_partition_assign(tp.topic, tp.partition, tp.offset)
        self._last_activity = time.monotonic()

    def _forget(self, partitions: List[Any]) -> None:
        ctx = self._app.processing_context
        for p in partitions:
            self._assigned.discard((p.topic, p.partition))
        self._positions = [TopicPartition(t, p) for t, p in sorted(self._assigned)]
        for p in partitions:
            if ctx.pausing_manager is not None:
                ctx.pausing_manager.revoke(p.topic, p.partition)
            if ctx._state_manager is not None:
                ctx._state_manager.on_partition_revoke(p.topic, p.partition)

    def _on_revoke(self, consumer: Any, partitions: List[Any]) -> None:
        logger.info("partitions revoked: %s", [(p.topic, p.partition) for p in partitions])
        if not self._failed and not self._closing and self._checkpoint is not None:
            self._commit()
        self._forget(partitions)

    def _on_lost(self, consumer: Any, partitions: List[Any]) -> None:
        logger.warning("partitions lost: %s", [(p.topic, p.partition) for p in partitions])
        if self._checkpoint is not None:
            self._checkpoint.close()
            self._checkpoint = self._new_checkpoint()
        self._forget(partitions)

    # -- signals --------------------------------------------------------------------------------
    def _install_signals(self) -> list:
        if threading.current_thread() is not threading.main_thread():
            return []
        previous = []

        def handler(signum: int, frame: Any) -> None:
            logger.info("received %s: stopping after a final checkpoint", signal.Signals(signum).name)
            self._stopping = True

        for sig in (signal.SIGINT, signal.SIGTERM):
            previous.append((sig, signal.signal(sig, handler)))
        return previous

    # -- main -------------------------------------------------------------------------------------
    def run(self) -> List[dict]:
        app = self._app
        sources = app._source_manager
        previous_signals = self._install_signals()
        try:
            app.setup_topics()
            if sources is not None:
                sources.start_all()
            if not app._registry:
                self._wait_for_sources()
                return []
            return self._run_dataframes()
        finally:
            for sig, handler in previous_signals:
                signal.signal(sig, handler)
            if sources is not None:
                sources.stop_all()

    def _wait_for_sources(self) -> None:
        sources = self._app._source_manager
        deadline = time.monotonic() + self._timeout if self._timeout else None
        while not self._stopping and sources.alive():
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        sources.raise_for_error()

    def _run_dataframes(self) -> List[dict]:
        app = self._app
        ctx = app.processing_context
        cfg = app.config
        consumer, producer = app._consumer, app._producer
        executors = app._registry.compose_all(sink=self._collector.sink if self._collector else None)
        topics = {t.name: t for t in app._registry.consumer_topics}
        handlers = {name: build_handler(topics[name], executor, ctx, app._on_consumer_error,
                                        app._on_processing_error)
                    for name, executor in executors.items()}
        collector, count = self._collector, self._count
        process = build_batch_processor(handlers, app._on_consumer_error, app._on_message_processed,
                                        (collector, count) if count else None)

        if ctx.sink_manager is not None:
            ctx.sink_manager.start_sinks()
        ctx.pausing_manager = PausingManager(consumer)
        if cfg.exactly_once:
            producer.init_transactions(cfg.request_timeout)
        consumer.subscribe(list(topics.values()), on_assign=self._on_assign, on_revoke=self._on_revoke,
                           on_lost=self._on_lost)
        self._checkpoint = self._new_checkpoint()
        ctx.checkpoint_hook = self._checkpoint_hook
        self._last_activity = time.monotonic()
        logger.info("processing topics %s (consumer group '%s', %s)", sorted(topics), cfg.consumer_group,
                    cfg.processing_guarantee)
        try:
            self._loop(process)
        except BaseException:
            self._failed = True
            self._shutdown(commit=False)
            raise
        finally:
            ctx.checkpoint_hook = None
        self._shutdown(commit=not self._failed)
        return collector.items if collector is not None else []

    def _loop(self, process: Any) -> None:
        app = self._app
        cfg = app.config
        ctx = app.processing_context
        consume = app._consumer._consumer.consume
        position = app._consumer._consumer.position
        producer_poll = app._producer.poll
        producer_poll_timeout = cfg.producer_poll_timeout
        pausing = ctx.pausing_manager
        track_first = bool(ctx.sinks)
        poll_timeout = cfg.consumer_poll_timeout
        monotonic = time.monotonic
        timeout, count, collector = self._timeout, self._count, self._collector
        batch_size = FIRST_BATCH
        while not self._stopping:
            checkpoint = self._checkpoint
            msgs = consume(min(batch_size, checkpoint.remaining()), 0)
            if not msgs:
                msgs = consume(1, poll_timeout if not timeout else min(poll_timeout, timeout))
            if msgs:
                started = monotonic()
                done = process(msgs)
                elapsed = monotonic() - started
                if elapsed > 0:
                    batch_size = max(1, min(BATCH_SIZE, int(done / elapsed * BATCH_SECONDS)))
                checkpoint = self._checkpoint  # a rebalance inside consume() may have replaced it
                parts = len(self._assigned) or 1
                if done == len(msgs) and self._positions:
                    # The whole batch is processed: the consumer's position of each partition is
                    # "last returned message + 1", one C call instead of a scan of the batch.
                    last = {(tp.topic, tp.partition): tp.offset - 1 for tp in position(self._positions)
                            if tp.offset >= 0}
                else:
                    last = last_offsets(msgs, done, parts)
                # First offsets (where a backpressured partition rewinds to) only matter with sinks,
                # and only until every assigned partition has one in this checkpoint.
                first = (first_offsets(msgs, done, parts)
                         if track_first and checkpoint.starts_known() < parts else {})
                checkpoint.store_batch(last, first, done)
                self._last_activity = monotonic()
            producer_poll(producer_poll_timeout)
            if checkpoint.expired():
                self._commit()
            if pausing.paused:
                pausing.resume_if_ready()
            if count and collector.count >= count:
                logger.info("run(count=%s): count reached, stopping", count)
                break
            # The idle timeout counts only while partitions are assigned ("after the rebalance").
            if timeout and self._assigned and monotonic() - self._last_activity >= timeout:
                logger.info("run(timeout=%s): no new message for %ss, stopping", timeout, timeout)
                break

    def _shutdown(self, commit: bool) -> None:
        app = self._app
        ctx = app.processing_context
        self._closing = True
        try:
            if commit and self._checkpoint is not None:
                self._commit()
                if app.config.exactly_once:
                    self._checkpoint.close()
            else:
                if ctx._state_manager is not None and hasattr(ctx._state_manager, "abort_checkpoint"):
                    ctx._state_manager.abort_checkpoint()
                if app.config.exactly_once:
                    try:
                        app._producer.abort_transaction()
                    except Exception as exc:  # noqa: BLE001 - already failing: keep the first error
                        logger.warning("aborting the transaction failed: %s", exc)
        finally:
            try:
                app._consumer.close()
            finally:
                self._closing = False
                if ctx._state_manager is not None:
                    ctx._state_manager.close()
                if ctx.sink_manager is not None:
                    ctx.sink_manager.close()
                if not commit:
                    try:
                        app._producer._producer.flush(5)
                    except Exception:  # noqa: BLE001
                        pass

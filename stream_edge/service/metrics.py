"""Prometheus metrics and health of a running Application, fed by a RunObserver.

Everything is counted between batches (``RunObserver`` hooks), never per message: watching a
pipeline costs nothing on its hot path. The metrics live in their own registry, so several
applications in one process (tests) do not collide.

Example::

    metrics = EdgeMetrics(commit_interval=5.0)
    app.add_run_observer(metrics)
    server = MetricsServer(metrics, port=9108).start()   # /metrics, /healthz, /readyz
"""

from __future__ import annotations

import os
import time
import weakref
from collections import Counter as CountBy
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily

from stream_edge.processing.observer import RunObserver, TopicPartitionKey

__all__ = ("EdgeMetrics",)

LAG_EVERY_SECONDS = 5.0

# A sink's ``stats()`` key -> (metric name, help); read at scrape time from the sinks seen flushing.
SINK_STATS = {
    "files_written": ("stream_edge_lake_files_written", "Parquet files published to the lake"),
    "bytes_written": ("stream_edge_lake_bytes_written", "Bytes of Parquet published to the lake"),
    "rows_written": ("stream_edge_lake_rows_written", "Rows published to the lake"),
    "silence_events": ("stream_edge_silence_events", "Keys reported silent by the sink's tracker"),
    "storage_faults_transient": ("stream_edge_sink_storage_faults_transient",
                                 "Transient storage faults met by the sink (each a backoff and a replay)"),
    "storage_faults_permanent": ("stream_edge_sink_storage_faults_permanent",
                                 "Permanent storage faults met by the sink (each stops the application)"),
}


class SinkStatsCollector:
    """Exposes the ``stats()`` of every sink that has flushed (e.g. the data-lake sink's files,
    bytes, rows and silence events), labelled by sink class."""

    def __init__(self) -> None:
        self.sinks: "weakref.WeakSet[Any]" = weakref.WeakSet()

    def collect(self) -> Any:
        totals: Dict[str, Dict[str, int]] = {key: {} for key in SINK_STATS}
        for sink in list(self.sinks):
            for key, value in sink.stats().items():
                if key in totals:
                    label = type(sink).__name__
                    totals[key][label] = totals[key].get(label, 0) + int(value)
        for key, (name, text) in SINK_STATS.items():
            family = CounterMetricFamily(name, text, labels=["sink"])
            for label, value in sorted(totals[key].items()):
                family.add_metric([label], value)
            yield family


class EdgeMetrics(RunObserver):
    """The edge's Prometheus metrics, and what ``/readyz`` and ``/healthz`` decide on.

    Ready (``/readyz``): running, partitions assigned, the processing loop went round within
    ``ready_stall_seconds`` (an idle loop goes round at every empty poll, so an idle healthy
    pipeline is ready), and no partition has been blocked by sink backpressure (paused, not
    committed since) for more than ``ready_paused_seconds``. Live (``/healthz``): the loop went
    round within ``live_stall_seconds`` once it started (a loop wedged in a user function or a
    sink is not live; before the first iteration, e.g. while state recovers, it is).
    """

    def __init__(self, commit_interval: float = 5.0, state_dir: Optional[str] = None,
                 registry: Optional[CollectorRegistry] = None, producer_stats_interval_ms: int = 5000,
                 ready_stall_seconds: float = 60.0, ready_paused_seconds: float = 120.0,
                 live_stall_seconds: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.producer_stats_interval_ms = producer_stats_interval_ms
        self.consumed = Counter("stream_edge_messages_consumed", "Messages consumed and processed",
                                ["topic"], registry=r)
        self.produced = Counter("stream_edge_messages_produced", "Messages sent to the broker (librdkafka "
                                "statistics, updated every producer_stats_interval_ms)", ["topic"], registry=r)
        self._produced_seen: Dict[str, int] = {}
        self.sink_stats = SinkStatsCollector()
        r.register(self.sink_stats)
        self.processing_errors = Counter("stream_edge_processing_errors", "Messages whose processing raised",
                                         registry=r)
        self.dead_letters = Counter("stream_edge_dead_letters", "Failing records sent to the dead-letter topic",
                                    ["stage"], registry=r)
        self.outage_retries = Counter("stream_edge_outage_retries", "Records that met an outage (a service that "
                                      "refused or did not answer) and wait in Kafka for a retry", ["stage"],
                                      registry=r)
        self.outage_active = Gauge("stream_edge_outage", "1 while a partition waits for an unavailable service",
                                   registry=r)
        self.checkpoints = Counter("stream_edge_checkpoints", "Checkpoints committed", registry=r)
        self.checkpoint_seconds = Histogram("stream_edge_checkpoint_duration_seconds", "Checkpoint commit time",
                                            registry=r)
        self.sink_flush_seconds = Histogram("stream_edge_sink_flush_duration_seconds", "Sink flush time per partition",
                                            ["sink"], registry=r)
        self.rebalances = Counter("stream_edge_rebalances", "Partition assignments and revocations", ["kind"],
                                  registry=r)
        self.assigned = Gauge("stream_edge_assigned_partitions", "Partitions assigned to this instance", registry=r)
        self.lag = Gauge("stream_edge_consumer_lag", "Messages behind the partition's end", ["topic", "partition"],
                         registry=r)
        self.state_bytes = Gauge("stream_edge_state_store_bytes", "Size of the local state directory", registry=r)
        if state_dir:
            self.state_bytes.set_function(lambda: float(_folder_bytes(Path(state_dir))))
        self.ready_stall_seconds = ready_stall_seconds
        self.ready_paused_seconds = ready_paused_seconds
        self.live_stall_seconds = live_stall_seconds
        self._clock = clock
        self._partitions: set = set()
        self._consumer: Any = None
        self._last_checkpoint: Optional[float] = None
        self._started: Optional[float] = None
        self._last_loop: Optional[float] = None  # written by the processing thread, read by HTTP ones
        self._blocked_since: Optional[float] = None
        self._outage: Optional[Tuple[str, float]] = None  # (service, since: time.monotonic())
        self._next_lag = 0.0
        self.stopped = False

    # -- RunObserver ------------------------------------------------------------------------------
    def on_start(self, topics: Sequence[str], consumer: Any) -> None:
        self._consumer = consumer
        self._started = self._clock()
        self.stopped = False

    def on_batch(self, messages: Sequence[Any], processed: int, seconds: float) -> None:
        per_topic = CountBy(msg.topic() for msg in messages[:processed] if msg.error() is None)
        for topic, count in per_topic.items():
            self.consumed.labels(topic).inc(count)
        now = time.monotonic()
        if now >= self._next_lag:
            self._next_lag = now + LAG_EVERY_SECONDS
            self._update_lag()

    def on_checkpoint(self, seconds: float, offsets: Mapping[TopicPartitionKey, int]) -> None:
        self.checkpoints.inc()
        self.checkpoint_seconds.observe(seconds)
        self._last_checkpoint = self._clock()

    def on_loop(self, blocked_since: Optional[float]) -> None:
        self._last_loop = self._clock()
        self._blocked_since = blocked_since

    def on_sink_flush(self, sink: Any, topic: str, partition: int, seconds: float) -> None:
        self.sink_flush_seconds.labels(type(sink).__name__).observe(seconds)
        if callable(getattr(sink, "stats", None)):
            self.sink_stats.sinks.add(sink)

    def on_producer_stats(self, stats: Mapping[str, Any]) -> None:
        for topic, info in (stats.get("topics") or {}).items():
            sent = sum(int(p.get("txmsgs", 0)) for pid, p in (info.get("partitions") or {}).items() if pid != "-1")
            delta = sent - self._produced_seen.get(topic, 0)
            if delta > 0:
                self.produced.labels(topic).inc(delta)
                self._produced_seen[topic] = sent

    def on_assign(self, partitions: Sequence[TopicPartitionKey]) -> None:
        self.rebalances.labels("assign").inc()
        self._partitions.update(partitions)
        self.assigned.set(len(self._partitions))

    def on_revoke(self, partitions: Sequence[TopicPartitionKey], lost: bool) -> None:
        self.rebalances.labels("lost" if lost else "revoke").inc()
        for topic, partition in partitions:
            self._partitions.discard((topic, partition))
            try:
                self.lag.remove(topic, str(partition))
            except KeyError:  # no lag reported for it yet
                pass
        self.assigned.set(len(self._partitions))

    def on_processing_error(self, exc: BaseException) -> None:
        self.processing_errors.inc()

    def on_dead_letter(self, stage: str, exc: BaseException) -> None:
        self.dead_letters.labels(stage).inc()

    def on_outage(self, stage: str, exc: BaseException) -> None:
        self.outage_retries.labels(stage).inc()

    def on_outage_state(self, service: Optional[str], since: Optional[float]) -> None:
        self._outage = None if service is None or since is None else (service, since)
        self.outage_active.set(0 if self._outage is None else 1)

    def on_stop(self, error: Optional[BaseException]) -> None:
        self.stopped = True

    # -- health -----------------------------------------------------------------------------------
    def _ages(self) -> Tuple[Optional[float], Optional[float]]:
        """(seconds since the loop last went round (or started), seconds the oldest blocked
        partition has been blocked); None where unknown / none."""
        now = self._clock()
        since = self._last_loop if self._last_loop is not None else self._started
        loop_age = None if since is None else now - since
        blocked = self._blocked_since
        return loop_age, (None if blocked is None else now - blocked)

    def _not_ready_because(self) -> Optional[str]:
        loop_age, blocked_age = self._ages()
        if self.stopped:
            return "the pipeline stopped"
        if loop_age is None:
            return "the pipeline has not started"
        if not self._partitions:
            return "no partition assigned"
        if loop_age > self.ready_stall_seconds:
            return f"the processing loop has not gone round for {loop_age:.0f}s (limit {self.ready_stall_seconds:g}s)"
        outage = self._outage
        if outage is not None:  # time.monotonic(), as the runner reports it
            return (f"outage: {outage[0]} has been unavailable for {time.monotonic() - outage[1]:.0f}s; "
                    f"its partitions are paused and retried, the records wait in Kafka")
        if blocked_age is not None and blocked_age > self.ready_paused_seconds:
            return (f"a partition has been paused by sink backpressure for {blocked_age:.0f}s "
                    f"(limit {self.ready_paused_seconds:g}s)")
        return None

    @property
    def ready(self) -> bool:
        return self._not_ready_because() is None

    def readiness(self) -> Dict[str, Any]:
        """What ``/readyz`` reports."""
        now = self._clock()
        loop_age, blocked_age = self._ages()
        reason = self._not_ready_because()
        report: Dict[str, Any] = {
            "ready": reason is None, "assigned_partitions": len(self._partitions),
            "last_checkpoint_age_s": None if self._last_checkpoint is None else round(now - self._last_checkpoint, 1),
            "loop_age_s": None if loop_age is None else round(loop_age, 1),
            "blocked_partition_age_s": None if blocked_age is None else round(blocked_age, 1)}
        if reason is not None:
            report["reason"] = reason
        return report

    @property
    def live(self) -> bool:
        """False while a started loop has not gone round for ``live_stall_seconds`` (wedged)."""
        return self.liveness()["live"]

    def liveness(self) -> Dict[str, Any]:
        """What ``/healthz`` reports."""
        last = self._last_loop
        if self.stopped or (last is None and self._started is None):
            return {"live": True, "loop_age_s": None}
        age = self._clock() - (last if last is not None else self._started)  # type: ignore[operator]
        report: Dict[str, Any] = {"live": age <= self.live_stall_seconds, "loop_age_s": round(age, 1)}
        if not report["live"]:
            report["reason"] = (f"the processing loop has not gone round for {age:.0f}s "
                                f"(limit {self.live_stall_seconds:g}s): wedged in a function or a sink?")
        return report

    # -- lag --------------------------------------------------------------------------------------
    def _update_lag(self) -> None:
        """Lag = the partition's high watermark (cached by the consumer's fetches) - its position."""
        consumer = self._consumer
        if consumer is None or not self._partitions:
            return
        from confluent_kafka import TopicPartition

        tps = [TopicPartition(t, p) for t, p in sorted(self._partitions)]
        try:
            positions = consumer.position(tps)
            for tp in positions:
                _, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), cached=True)
                if high >= 0 and tp.offset >= 0:
                    self.lag.labels(tp.topic, str(tp.partition)).set(max(0, high - tp.offset))
        except Exception:  # noqa: BLE001 - metrics never break processing; the next batch retries
            return


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                continue
    return total

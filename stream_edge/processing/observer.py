"""RunObserver: what a running Application reports, for metrics, health checks and logs.

The runner calls an observer between batches, never per message, so watching a pipeline costs
nothing on the hot path. Subclass it and override what you need; every method is a no-op here.

Example::

    class Counting(RunObserver):
        consumed = 0

        def on_batch(self, messages, processed, seconds):
            self.consumed += processed

    app.add_run_observer(Counting())
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Iterator, List, Mapping, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.types import RawConfluentKafkaMessageProto
    from stream_edge.rowconsumer import RowConsumer
    from stream_edge.sinks.base.sink import BaseSink

__all__ = ("RunObserver", "TopicPartitionKey", "ProcessHooks", "PipelineDefined", "process_hooks", "installed_hooks")

TopicPartitionKey = Tuple[str, int]


class RunObserver:
    """Hooks of one ``Application.run()``; called from the processing thread.

    ``producer_stats_interval_ms``: set it above 0 to receive librdkafka's producer statistics
    (``on_producer_stats``) that often; they count produced messages per topic without touching
    the per-message path.
    """

    producer_stats_interval_ms: int = 0

    def on_start(self, topics: Sequence[str], consumer: "RowConsumer") -> None:
        """Processing starts: the input topics and the consumer (a ``RowConsumer``, e.g. for lag)."""

    def on_batch(self, messages: Sequence["RawConfluentKafkaMessageProto"], processed: int, seconds: float) -> None:
        """A batch was processed: the raw ``confluent_kafka.Message`` objects, how many of them
        were processed (``run(count=...)`` may stop early) and how long processing took."""

    def on_checkpoint(self, seconds: float, offsets: Mapping[TopicPartitionKey, int]) -> None:
        """A checkpoint committed ``offsets`` (last processed offset per partition) in ``seconds``."""

    def on_sink_flush(self, sink: "BaseSink", topic: str, partition: int, seconds: float) -> None:
        """``sink.flush(topic, partition)`` returned after ``seconds`` (part of a checkpoint)."""

    def on_assign(self, partitions: Sequence[TopicPartitionKey]) -> None:
        """Partitions were assigned (after their state was recovered)."""

    def on_revoke(self, partitions: Sequence[TopicPartitionKey], lost: bool) -> None:
        """Partitions were revoked (``lost``: taken away without a chance to commit)."""

    def on_producer_stats(self, stats: Mapping[str, Any]) -> None:
        """librdkafka's statistics of the output producer (the decoded ``stats_cb`` JSON)."""

    def on_loop(self, blocked_since: Optional[float]) -> None:
        """The processing loop went round once: after a batch, or after an empty poll (at least
        about once per ``consumer_poll_timeout`` while idle). ``blocked_since``: the
        ``time.monotonic()`` since which a partition has been paused by sink backpressure without
        committing (None: no partition is). The heartbeat of ``/healthz`` and ``/readyz``."""

    def on_processing_error(self, exc: BaseException) -> None:
        """A message failed in the pipeline (before ``on_processing_error`` decides to go on)."""

    def on_dead_letter(self, stage: str, exc: BaseException) -> None:
        """A failing record was sent to the dead-letter topic (``stage``: ``deserialization`` or
        ``processing``); see :mod:`stream_edge.processing.dead_letter`."""

    def on_outage(self, stage: str, exc: BaseException) -> None:
        """A record met an outage (``stream_edge.errors.is_outage``) at ``stage``: its partition
        pauses and it is retried after a backoff (not dead-lettered)."""

    def on_outage_state(self, service: Optional[str], since: Optional[float]) -> None:
        """The outage state changed: ``service`` is unavailable since ``since``
        (``time.monotonic()``), or both None: every partition is processed again."""

    def on_stop(self, error: Optional[BaseException]) -> None:
        """The run ended, normally (``error`` None) or with ``error``."""


class PipelineDefined(Exception):
    """Raised by ``Application.run()`` in check mode: the pipeline is defined, nothing connected."""

    def __init__(self, app: object) -> None:
        super().__init__("pipeline defined (check mode: not running it)")
        self.app = app


@dataclass(frozen=True)
class ProcessHooks:
    """What the ``stream-edge`` command applies to every Application it runs, including one a
    user's script creates itself: observers to attach, check mode (``run()`` raises
    :class:`PipelineDefined` instead of connecting) and its resolved settings as Application
    arguments (``application_defaults``: used where the script passes none; see
    :func:`stream_edge.app_config.resolve_config`).

    Immutable; :func:`installed_hooks` makes a set current for a block (per thread), and an
    Application reads :func:`process_hooks` once, when it is created.

    Example::

        with installed_hooks(ProcessHooks(check_only=True)):
            runpy.run_path("app.py")          # its app.run() raises PipelineDefined
    """

    observers: Tuple[RunObserver, ...] = ()
    check_only: bool = False
    application_defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


_HOOKS: ContextVar[ProcessHooks] = ContextVar("stream_edge_process_hooks", default=ProcessHooks())


def process_hooks() -> ProcessHooks:
    """The hooks installed for this thread (none: no observers, not check mode)."""
    return _HOOKS.get()


@contextmanager
def installed_hooks(hooks: ProcessHooks) -> Iterator[ProcessHooks]:
    """``hooks`` are the current ones for the block; the previous ones come back after."""
    token = _HOOKS.set(hooks)
    try:
        yield hooks
    finally:
        _HOOKS.reset(token)

"""Application: owns the Kafka clients, topics, state manager and checkpoints, and runs the loop.

Example::

    from stream_edge import Application

    app = Application(broker_address="localhost:9092", consumer_group="demo",
                      auto_offset_reset="earliest")
    sdf = app.dataframe(app.topic("input"))
    sdf = sdf.filter(lambda v: v["temperature"] > 20)
    sdf["fahrenheit"] = sdf["temperature"] * 9 / 5 + 32
    sdf.to_topic(app.topic("output"))
    app.run()
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple, Union

from stream_edge.app_config import ApplicationConfig, resolve_config, transactional_id
from stream_edge.dataframe import DataframeRegistry, StreamingDataFrame
from stream_edge.error_callbacks import (ConsumerErrorCallback, ProcessingErrorCallback, ProducerErrorCallback,
                                         default_on_consumer_error, default_on_processing_error,
                                         default_on_producer_error)
from stream_edge.kafka.configuration import ConnectionConfig, connection_dict
from stream_edge.kafka.consumer import PREFETCH_DEFAULTS, Consumer
from stream_edge.kafka.producer import Producer
from stream_edge.logging import LogLevel, configure_logging
from stream_edge.models.serializers import DeserializerType, SerializerType
from stream_edge.models.topics import Topic, TopicAdmin, TopicConfig, TopicManager
from stream_edge.models.timestamps import TimestampExtractor
from stream_edge.processing.context import ProcessingContext
from stream_edge.processing.cursor import MessageCursor
from stream_edge.processing.dead_letter import DeadLetterTopic
from stream_edge.processing.observer import PipelineDefined, RunObserver, process_hooks
from stream_edge.processing.runner import RunLimits, Runner, RunnerParts
from stream_edge.rowconsumer import RowConsumer
from stream_edge.rowproducer import RowProducer

__all__ = ("Application", "ApplicationConfig")

logger = logging.getLogger("stream_edge")

ProcessingGuarantee = str  # "at-least-once" | "exactly-once"
MessageProcessedCallback = Callable[[str, int, int], None]


@dataclass(frozen=True)
class PipelineOutline:
    """What an Application defines (:meth:`Application.outline`): input topics, sinks, sources."""

    input_topics: Tuple[str, ...]
    sinks: Tuple[str, ...]
    has_sources: bool

    @property
    def empty(self) -> bool:
        return not self.input_topics and not self.has_sources


class Application:
    """A stream processing application: topics in, StreamingDataFrames, topics/sinks out.

    See the module docstring for an example; arguments follow Quix Streams 3.x.
    """

    def __init__(self, broker_address: Optional[Union[str, ConnectionConfig]] = None, *,
                 quix_sdk_token: Optional[str] = None, quix_portal_api: Optional[str] = None,
                 consumer_group: Optional[str] = None,
                 auto_offset_reset: str = "latest", commit_interval: float = 5.0, commit_every: int = 0,
                 consumer_extra_config: Optional[dict] = None, producer_extra_config: Optional[dict] = None,
                 state_dir: Union[None, str, Path] = None, rocksdb_options: Any = None,
                 on_consumer_error: Optional[ConsumerErrorCallback] = None,
                 on_processing_error: Optional[ProcessingErrorCallback] = None,
                 on_producer_error: Optional[ProducerErrorCallback] = None,
                 on_message_processed: Optional[MessageProcessedCallback] = None,
                 consumer_poll_timeout: float = 1.0, producer_poll_timeout: float = 0.0,
                 loglevel: Optional[Union[int, LogLevel]] = "INFO", auto_create_topics: bool = True,
                 use_changelog_topics: bool = True, auto_recover_from_source_offset_out_of_range: bool = True,
                 state_recovery_offset_reset: str = "earliest", quix_config_builder: Any = None,
                 topic_manager: Optional[TopicManager] = None, request_timeout: float = 30,
                 topic_create_timeout: float = 60, processing_guarantee: ProcessingGuarantee = "at-least-once",
                 max_partition_buffer_size: int = 10000, broker_availability_timeout: float = 120.0,
                 dead_letter_topic: Optional[str] = None, max_retry_seconds: float = 300.0) -> None:
        configure_logging(loglevel)
        if dead_letter_topic is not None and (not isinstance(dead_letter_topic, str) or not dead_letter_topic.strip()):
            raise ValueError(f"dead_letter_topic must be a topic name, got {dead_letter_topic!r}")
        # The stream-edge command's hooks, read once: its observers, check mode and settings.
        self._hooks = process_hooks()
        self._config = resolve_config(dict(
            broker_address=broker_address, quix_sdk_token=quix_sdk_token, quix_portal_api=quix_portal_api,
            quix_config_builder=quix_config_builder, consumer_group=consumer_group,
            auto_offset_reset=auto_offset_reset, commit_interval=commit_interval, commit_every=commit_every,
            consumer_extra_config=consumer_extra_config, producer_extra_config=producer_extra_config,
            state_dir=state_dir, rocksdb_options=rocksdb_options, consumer_poll_timeout=consumer_poll_timeout,
            producer_poll_timeout=producer_poll_timeout, auto_create_topics=auto_create_topics,
            use_changelog_topics=use_changelog_topics, request_timeout=request_timeout,
            topic_create_timeout=topic_create_timeout, processing_guarantee=processing_guarantee,
            auto_recover_from_source_offset_out_of_range=auto_recover_from_source_offset_out_of_range,
            state_recovery_offset_reset=state_recovery_offset_reset,
            max_partition_buffer_size=max_partition_buffer_size,
            broker_availability_timeout=broker_availability_timeout), os.environ, self._hooks.application_defaults)
        cfg = self._config
        self._on_consumer_error = on_consumer_error or default_on_consumer_error
        self._on_processing_error = on_processing_error or default_on_processing_error
        self._on_producer_error = on_producer_error or default_on_producer_error
        self._on_message_processed = on_message_processed
        # Not stream_edge's defaults: with a dead-letter topic, a record no callback decides on is
        # dead-lettered instead of stopping the app (stream_edge/processing/dead_letter.py).
        self._user_on_consumer_error = on_consumer_error
        self._user_on_processing_error = on_processing_error
        self._dead_letter_topic = dead_letter_topic
        if not max_retry_seconds > 0:
            raise ValueError(f"max_retry_seconds must be positive, got {max_retry_seconds!r}")
        self._max_retry_seconds = float(max_retry_seconds)  # how long an outage is retried (stream_edge/errors.py)

        self._topic_manager = topic_manager or TopicManager(
            topic_admin=TopicAdmin(cfg.broker_address, extra_config=cfg.producer_extra_config),
            consumer_group=cfg.consumer_group, timeout=cfg.request_timeout, create_timeout=cfg.topic_create_timeout,
            auto_create_topics=cfg.auto_create_topics)
        self._cursor = MessageCursor()  # the message the loop is on (the context's, for its life)
        self._producer = self._new_row_producer()
        self._consumer = RowConsumer(
            cfg.broker_address, cfg.consumer_group, cfg.auto_offset_reset, auto_commit_enable=False,
            extra_config={"enable.auto.offset.store": False, "isolation.level": "read_committed",
                          **cfg.consumer_extra_config},
            on_error=self._on_consumer_error, max_partition_buffer_size=cfg.max_partition_buffer_size)
        self._processing_context = ProcessingContext(producer=self._producer, consumer=self._consumer,
                                                     state_manager_factory=self._create_state_manager,
                                                     runner_lookup=self._running_runner, cursor=self._cursor)
        self._registry = DataframeRegistry()
        self._source_manager: Any = None
        self._runner: Optional[Runner] = None
        self._observers: List[RunObserver] = list(self._hooks.observers)  # the stream-edge command's

    # -- configuration --------------------------------------------------------------------------
    @property
    def config(self) -> ApplicationConfig:
        return self._config

    @property
    def dead_letter_topic(self) -> Optional[str]:
        """Where failing records go (``dead_letter_topic=``), None if they stop the app; see
        :mod:`stream_edge.processing.dead_letter`."""
        return self._dead_letter_topic

    @property
    def is_quix_app(self) -> bool:
        return False

    @property
    def topic_manager(self) -> TopicManager:
        return self._topic_manager

    @property
    def processing_context(self) -> ProcessingContext:
        return self._processing_context

    @classmethod
    def Quix(cls, *args: Any, **kwargs: Any) -> "Application":
        raise AttributeError("Application.Quix() is deprecated and Quix Cloud is not supported; use Application()")

    def _new_row_producer(self) -> RowProducer:
        cfg = self._config
        extra = dict(cfg.producer_extra_config)
        if cfg.exactly_once:
            # Longer than a checkpoint needs, short enough that a crashed instance's open
            # transaction does not hold read_committed readers back for long.
            extra.setdefault("transaction.timeout.ms", max(10_000, int(cfg.commit_interval * 3000)))
        tid = transactional_id(extra.pop("transactional.id", None), cfg.consumer_group_prefix,
                               default=f"{cfg.consumer_group}-{uuid.uuid4()}")
        return RowProducer(cfg.broker_address, extra_config=extra, on_error=self._on_producer_error,
                           flush_timeout=cfg.flush_timeout, transactional=cfg.exactly_once, transactional_id=tid,
                           message_cursor=self._cursor)

    def _request_producer_stats(self) -> None:
        """Before the output producer connects: librdkafka statistics for observers that want them."""
        every = min((o.producer_stats_interval_ms for o in self._observers if o.producer_stats_interval_ms > 0),
                    default=0)
        if every:
            self._producer.enable_statistics(every, self._on_producer_stats)

    def _on_producer_stats(self, raw: str) -> None:
        """librdkafka's statistics (called from the producer's poll): passed to the observers."""
        stats = json.loads(raw)
        for observer in self._observers:
            try:
                observer.on_producer_stats(stats)
            except Exception:  # noqa: BLE001 - watching never breaks processing
                logger.exception("run observer %r failed in on_producer_stats", observer)

    def _create_state_manager(self) -> Any:
        from stream_edge.state import StateStoreManager  # owned by the state package

        cfg = self._config
        return StateStoreManager(group_id=cfg.consumer_group, state_dir=cfg.state_dir,
                                 rocksdb_options=cfg.rocksdb_options, use_changelog_topics=cfg.use_changelog_topics,
                                 auto_recover_from_source_offset_out_of_range=(
                                     cfg.auto_recover_from_source_offset_out_of_range),
                                 state_recovery_offset_reset=cfg.state_recovery_offset_reset,
                                 auto_offset_reset=cfg.auto_offset_reset,
                                 producer=self._producer, consumer=self._consumer, topic_manager=self._topic_manager,
                                 recovery_consumer_config={**PREFETCH_DEFAULTS, **cfg.consumer_extra_config,
                                                           **connection_dict(cfg.broker_address),
                                                           "group.id": cfg.consumer_group})

    # -- definitions ----------------------------------------------------------------------------
    def topic(self, name: str, value_deserializer: DeserializerType = "json", key_deserializer: DeserializerType = "bytes",
              value_serializer: SerializerType = "json", key_serializer: SerializerType = "bytes",
              config: Optional[TopicConfig] = None, timestamp_extractor: Optional[TimestampExtractor] = None) -> Topic:
        """Define a topic and its (de)serializers (by name like ``"json"`` or an instance).

        Example: ``app.topic("output", key_serializer="str", value_serializer=JSONSerializer())``
        """
        return self._topic_manager.topic(name=name, value_deserializer=value_deserializer,
                                         key_deserializer=key_deserializer, value_serializer=value_serializer,
                                         key_serializer=key_serializer, config=config,
                                         timestamp_extractor=timestamp_extractor)

    def dataframe(self, topic: Optional[Topic] = None, source: Any = None) -> StreamingDataFrame:
        """A StreamingDataFrame reading ``topic`` (or what ``source`` produces).

        Example: ``sdf = app.dataframe(app.topic("input"))``
        """
        if source is not None:
            topic = self.add_source(source, topic)
        if topic is None:
            raise ValueError("dataframe() needs a topic or a source")
        self._topic_manager.register(topic)
        sdf = StreamingDataFrame(topic, topic_manager=self._topic_manager, registry=self._registry,
                                 processing_context=self._processing_context)
        self._registry.register_root(sdf)
        return sdf

    def add_source(self, source: Any, topic: Optional[Topic] = None) -> Topic:
        """Run ``source`` with the application; it produces to ``topic`` (default: its own)."""
        from stream_edge.sources.base.manager import SourceManager

        if topic is None:
            default = source.default_topic()
            topic = self._topic_manager.register(default.__clone__(name=f"source__{default.name}"))
        # A topic given here is created only if it was defined with app.topic() (or is the input of
        # app.dataframe()), as in Quix Streams 3.28: a bare Topic(...) must exist on the broker.
        if self._source_manager is None:
            self._source_manager = SourceManager()
        # configure() and start() run in the source's own process (stream_edge/sources/base/process.py)
        self._source_manager.register(source, topic, self._source_settings(), topic_manager=self._topic_manager)
        return topic

    def _source_settings(self) -> Any:
        from stream_edge.sources.base.process import SourceSettings

        cfg = self._config
        return SourceSettings(broker_address=cfg.broker_address, consumer_group=cfg.consumer_group,
                              producer_extra_config=dict(cfg.producer_extra_config),
                              consumer_extra_config=dict(cfg.consumer_extra_config),
                              on_producer_error=self._on_producer_error, recovery_timeout=cfg.request_timeout * 2)

    def _new_source_producer(self) -> RowProducer:
        return RowProducer(self._config.broker_address, extra_config=self._config.producer_extra_config,
                           on_error=self._on_producer_error)

    # -- clients for other uses ----------------------------------------------------------------
    def get_producer(self, transactional: bool = False) -> Producer:
        """A new Producer configured like the application's (e.g. to produce test data).

        ``transactional=True`` gives a transactional producer whatever the processing guarantee
        (its ``transactional.id``: the configured one, else a random one); the caller begins and
        commits the transactions. The topics defined so far are created first, as Quix does at
        ``app.topic()``, so producing to ``topic.name`` right away works.
        """
        self._create_defined_topics()
        extra_config = dict(self._config.producer_extra_config)
        if transactional:
            extra_config["transactional.id"] = transactional_id(extra_config.get("transactional.id"),
                                                                self._config.consumer_group_prefix)
        else:
            extra_config.pop("transactional.id", None)
        return Producer(self._config.broker_address, extra_config=extra_config, transactional=transactional)

    def _create_defined_topics(self) -> None:
        if self._topic_manager.all_topics and not self._hooks.check_only:
            self.setup_topics()

    def get_consumer(self, auto_commit_enable: bool = True) -> Consumer:
        """A new Consumer configured like the application's (the topics defined so far are created
        first, as for :meth:`get_producer`)."""
        self._create_defined_topics()
        cfg = self._config
        return Consumer(cfg.broker_address, cfg.consumer_group, cfg.auto_offset_reset,
                        auto_commit_enable=auto_commit_enable,
                        extra_config={"enable.auto.offset.store": False, **cfg.consumer_extra_config})

    def clear_state(self) -> None:
        """Delete the local state of this application's consumer group."""
        manager = self._processing_context.existing_state_manager
        if manager is not None:
            manager.clear_state()
            return
        group_dir = self._config.state_dir / self._config.consumer_group
        if group_dir.exists():
            import shutil

            shutil.rmtree(group_dir)

    def setup_topics(self) -> None:
        """Create (if auto_create_topics) and validate every topic of the application."""
        topics = self._topic_manager.all_topics
        if topics:
            logger.info("topics required by this application: %s", sorted(topics))
        self._topic_manager.create_all_topics()
        self._topic_manager.validate_all_topics()

    # -- running --------------------------------------------------------------------------------
    def add_run_observer(self, observer: RunObserver) -> None:
        """Report batches, checkpoints, rebalances and errors of ``run()`` to ``observer``
        (metrics, health checks); see :class:`stream_edge.processing.observer.RunObserver`."""
        self._observers.append(observer)

    def run(self, dataframe: Optional[StreamingDataFrame] = None, timeout: float = 0.0, count: int = 0,
            collect: bool = True, metadata: bool = False, collect_limit: Optional[int] = None) -> List[dict]:
        """Process messages until stopped (SIGTERM/SIGINT/stop()), or until ``count`` outputs or
        ``timeout`` seconds without a new message; returns the collected outputs in those modes.

        ``collect_limit``: outputs kept at most (default 10,000, or ``count`` if larger; 0: no
        limit); later outputs are processed, not returned (one WARNING), so a run over a long
        backlog does not keep a copy of every output (see docs/operations.md, "Memory sizing").

        Example: ``rows = app.run(count=10, timeout=5)  # [{"field": ...}, ...]``
        """
        if not self._registry and self._source_manager is None:
            raise ValueError("nothing to run: define a dataframe (app.dataframe(topic)) or add a source")
        if not self._registry and count:
            # 3.28.1's words (a count needs dataframe outputs; only a timeout applies to sources)
            raise ValueError("Can only provide a timeout to .run() when running a plain Source (no StreamingDataFrame).")
        if self._hooks.check_only:
            raise PipelineDefined(self)
        self._request_producer_stats()
        ctx = self._processing_context
        dead_letter = self._new_dead_letter() if self._registry else None
        parts = RunnerParts(
            config=self._config, consumer=self._consumer, producer=self._producer, registry=self._registry,
            context=ctx, state_manager=ctx.existing_state_manager, sink_manager=ctx.sink_manager,
            sources=self._source_manager, on_consumer_error=self._on_consumer_error,
            on_processing_error=self._on_processing_error, on_message_processed=self._on_message_processed,
            setup_topics=self.setup_topics, observers=list(self._observers), dead_letter=dead_letter,
            max_retry_seconds=self._max_retry_seconds)
        runner = Runner(parts, RunLimits(timeout=timeout, count=count, collect=collect, metadata=metadata,
                                          collect_limit=collect_limit))
        self._runner = runner
        try:
            return runner.run()
        finally:
            self._runner = None
            # The run has flushed (or aborted) its output: release the Kafka clients now, so none
            # keeps reconnecting after the broker goes away (the next run creates new ones).
            self._producer.release()
            self._topic_manager.close()

    def _new_dead_letter(self) -> Optional[DeadLetterTopic]:
        """The run's dead-letter topic (registered, so ``setup_topics`` creates it), or None."""
        name = self._dead_letter_topic
        if name is None:
            return None
        if name in {t.name for t in self._registry.consumer_topics}:
            raise ValueError(f"dead_letter_topic {name!r} is an input topic of this application: its dead letters "
                             f"would be read and fail again")
        self._topic_manager.topic(name, value_deserializer="bytes", key_deserializer="bytes",
                                  value_serializer="bytes", key_serializer="bytes")
        return DeadLetterTopic(name, self._producer.produce, self._user_on_consumer_error,
                               self._user_on_processing_error)

    def _running_runner(self) -> Optional[Runner]:
        """The Runner of the current ``run()`` (None otherwise): the processing context's
        v3 ``commit_checkpoint``/``init_checkpoint``/``store_offset`` go to it."""
        return self._runner

    def outline(self) -> "PipelineOutline":
        """What this application defines, for the ``stream-edge`` command's messages."""
        return PipelineOutline(input_topics=tuple(sorted(t.name for t in self._registry.consumer_topics)),
                               sinks=tuple(type(s).__name__ for s in self._processing_context.sinks),
                               has_sources=self._source_manager is not None)

    def stop(self, fail: bool = False) -> None:
        """Stop processing; the current checkpoint is committed unless ``fail`` is True."""
        if self._runner is not None:
            self._runner.stop(fail=fail)

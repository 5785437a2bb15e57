"""SourceManager: the Application's sources, each in its own process (see ``process.py``)."""

from __future__ import annotations

import logging
from typing import Any, List, Optional

from stream_edge.models.topics import Topic, TopicConfig

from .process import SourceProcess, SourceSettings

__all__ = ("SourceManager", "source_changelog_topic")

logger = logging.getLogger("stream_edge")


def source_changelog_topic(topic_manager: Any, source: Any, consumer_group: str) -> Topic:
    """Define the compacted changelog topic of a StatefulSource, named as in Quix Streams:
    ``changelog__<consumer group>--source-<name>``, ``store_partitions_count`` partitions."""
    from stream_edge.models.topics.topic import TopicType

    name = f"changelog__{consumer_group}--{source.store_name}"
    config = TopicConfig(num_partitions=source.store_partitions_count, replication_factor=1,
                         extra_config={"cleanup.policy": "compact"})
    topic = Topic(name, TopicType.CHANGELOG, config, value_deserializer="bytes", key_deserializer="bytes",
                  value_serializer="bytes", key_serializer="bytes")
    # The manager keeps source-less changelogs under None (created and validated with the others).
    topic_manager.changelog_topics.setdefault(None, {})[source.store_name] = topic
    return topic


class SourceManager:
    """Starts, watches and stops the sources' processes."""

    def __init__(self) -> None:
        self.processes: List[SourceProcess] = []

    @property
    def sources(self) -> List[Any]:
        return [p.source for p in self.processes]

    @property
    def topics(self) -> List[Topic]:
        return [p.topic for p in self.processes]

    def register(self, source: Any, topic: Topic, settings: SourceSettings,
                 topic_manager: Any = None) -> SourceProcess:
        """Add ``source`` producing to ``topic``; a StatefulSource also gets its changelog topic."""
        from .source import StatefulSource

        if source in self.sources:
            raise ValueError(f"source {source!r} is registered already")
        changelog: Optional[str] = None
        if isinstance(source, StatefulSource):
            if topic_manager is None:
                raise ValueError(f"StatefulSource {source!r} needs the application's topic manager")
            changelog = source_changelog_topic(topic_manager, source, settings.consumer_group).name
        process = SourceProcess(source, topic, settings, changelog_topic=changelog)
        self.processes.append(process)
        return process

    def start_sources(self) -> None:
        """Start every source's process. One that cannot start (e.g. a source that does not pickle
        with the ``spawn`` method) raises ``SourceException`` without a pid or exit code, its error
        as the context, as Quix Streams 3.28 reports it."""
        from .exceptions import SourceException

        for process in self.processes:
            logger.info("starting source %s", process.name)
            try:
                process.start()
            except Exception:
                raise SourceException(process)

    def is_alive(self) -> bool:
        """True while any source's process runs."""
        return any(p.is_alive() for p in self.processes)

    def raise_for_error(self) -> None:
        """Raise SourceException if a source's process failed."""
        for process in self.processes:
            process.raise_for_error()

    def stop_all(self) -> None:
        """Stop every source (SIGTERM, then SIGKILL after its shutdown_timeout); raises nothing
        (the Runner stops the sources also while another error propagates)."""
        for process in self.processes:
            process.request_stop()
        for process in self.processes:
            process.stop()

    def stop_sources(self) -> None:
        """Stop every source, then raise ``SourceException`` if one failed (also while stopping),
        as Quix Streams 3.28's manager does."""
        self.stop_all()
        self.raise_for_error()

    # the names the Runner uses
    start_all = start_sources
    alive = is_alive

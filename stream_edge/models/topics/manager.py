"""TopicManager: every topic of an Application (inputs, outputs, repartition, changelogs)."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional

from stream_edge.models.serializers import DeserializerType, SerializerType

from .admin import TopicAdmin
from .exceptions import TopicConfigurationMismatch, TopicNotFoundError
from .topic import TimestampExtractor, Topic, TopicConfig, TopicType

__all__ = ("TopicManager", "affirm_ready_for_create")

logger = logging.getLogger("stream_edge")


def affirm_ready_for_create(topics: List[Topic]) -> None:
    """Every topic to create must have a config."""
    missing = [t.name for t in topics if t.config is None]
    if missing:
        raise ValueError(f"topics without a TopicConfig cannot be created: {missing}")


class TopicManager:
    """Creates, names and validates the topics of one Application."""

    default_num_partitions = 1
    default_replication_factor = 1
    _changelog_extra_config_defaults = {"cleanup.policy": "compact"}

    def __init__(self, topic_admin: TopicAdmin, consumer_group: str, timeout: float = 30,
                 create_timeout: float = 60, auto_create_topics: bool = True) -> None:
        self._admin = topic_admin
        self._consumer_group = consumer_group
        self._timeout = timeout
        self._create_timeout = create_timeout
        self._auto_create_topics = auto_create_topics
        self._topics: Dict[str, Topic] = {}
        self._repartition_topics: Dict[str, Topic] = {}
        self._changelog_topics: Dict[Optional[str], Dict[str, Topic]] = {}

    def close(self) -> None:
        """Release the admin client between runs (see ``TopicAdmin.close``)."""
        self._admin.close()

    # -- views ------------------------------------------------------------------------------
    @property
    def changelog_topics(self) -> Dict[Optional[str], Dict[str, Topic]]:
        return self._changelog_topics

    @property
    def changelog_topics_list(self) -> List[Topic]:
        return [t for by_store in self._changelog_topics.values() for t in by_store.values()]

    @property
    def non_changelog_topics(self) -> Dict[str, Topic]:
        return {**self._topics, **self._repartition_topics}

    @property
    def all_topics(self) -> Dict[str, Topic]:
        return {**self.non_changelog_topics, **{t.name: t for t in self.changelog_topics_list}}

    # -- definitions ------------------------------------------------------------------------
    def topic_config(self, num_partitions: Optional[int] = None, replication_factor: Optional[int] = None,
                     extra_config: Optional[dict] = None) -> TopicConfig:
        return TopicConfig(num_partitions=num_partitions or self.default_num_partitions,
                           replication_factor=replication_factor or self.default_replication_factor,
                           extra_config=dict(extra_config or {}))

    def topic(self, name: str, value_deserializer: Optional[DeserializerType] = None,
              key_deserializer: Optional[DeserializerType] = "bytes",
              value_serializer: Optional[SerializerType] = None,
              key_serializer: Optional[SerializerType] = "bytes", create_config: Optional[TopicConfig] = None,
              timestamp_extractor: Optional[TimestampExtractor] = None, *,
              config: Optional[TopicConfig] = None) -> Topic:
        """Define (and register) a topic; without ``create_config`` (``config`` is its older name)
        the manager's defaults are used."""
        chosen = create_config if create_config is not None else config
        topic = Topic(name, create_config=self._complete(chosen), value_deserializer=value_deserializer,
                      key_deserializer=key_deserializer, value_serializer=value_serializer,
                      key_serializer=key_serializer, timestamp_extractor=timestamp_extractor)
        return self.register(topic)

    def _complete(self, config: Optional[TopicConfig]) -> TopicConfig:
        """A config with the manager's defaults where ``config`` leaves a count unset (None)."""
        if config is None:
            return self.topic_config()
        return TopicConfig(num_partitions=config.num_partitions or self.default_num_partitions,
                           replication_factor=config.replication_factor or self.default_replication_factor,
                           extra_config=dict(config.extra_config or {}))

    def register(self, topic: Topic) -> Topic:
        """Register an existing Topic (a missing config, or missing counts, get the defaults)."""
        topic.create_config = self._complete(topic.create_config)
        topic.broker_config_loader = lambda: self._broker_config(topic)
        self._topics[topic.name] = topic
        return topic

    def _source_config(self, topic_name: str, timeout: Optional[float]) -> TopicConfig:
        """The broker's config of a source topic, or its definition's when it does not exist yet."""
        actual = self._admin.inspect_topics([topic_name], timeout=timeout or self._timeout).get(topic_name)
        if actual is not None:
            return actual
        known = self.non_changelog_topics.get(topic_name)
        return (known.config if known is not None and known.config else self.topic_config())

    def repartition_topic(self, operation: str, topic_name: str, value_deserializer: Optional[DeserializerType] = "json",
                          key_deserializer: Optional[DeserializerType] = "json",
                          value_serializer: Optional[SerializerType] = "json",
                          key_serializer: Optional[SerializerType] = "json",
                          timeout: Optional[float] = None) -> Topic:
        """The internal topic a group_by() writes to and reads from (same partition count as the source)."""
        source = self._source_config(topic_name, timeout)
        name = f"repartition__{self._consumer_group}--{topic_name}--{operation}"
        topic = Topic(name, TopicType.REPARTITION, TopicConfig(num_partitions=source.num_partitions,
                                               replication_factor=source.replication_factor,
                                               extra_config={k: v for k, v in source.extra_config.items()
                                                             if k in ("retention.ms", "retention.bytes")}),
                      value_deserializer=value_deserializer, key_deserializer=key_deserializer,
                      value_serializer=value_serializer, key_serializer=key_serializer)
        self._repartition_topics[name] = topic
        return topic

    def changelog_topic(self, topic_name: Optional[str], store_name: str, config: Optional[TopicConfig] = None,
                        timeout: Optional[float] = None) -> Topic:
        """The compacted changelog of a state store (one partition per source partition)."""
        if config is None:
            source = self._source_config(topic_name, timeout) if topic_name else self.topic_config()
            config = TopicConfig(num_partitions=source.num_partitions, replication_factor=source.replication_factor,
                                 extra_config=dict(self._changelog_extra_config_defaults))
        else:
            config.extra_config = {**config.extra_config, **self._changelog_extra_config_defaults}
        name = f"changelog__{self._consumer_group}--{topic_name or 'source'}--{store_name}"
        topic = Topic(name, TopicType.CHANGELOG, config, value_deserializer="bytes", key_deserializer="bytes",
                      value_serializer="bytes", key_serializer="bytes")
        self._changelog_topics.setdefault(topic_name, {})[store_name] = topic
        return topic

    # -- broker side ------------------------------------------------------------------------
    def _broker_config(self, topic: Topic) -> TopicConfig:
        """Create ``topic`` if allowed and missing, then return its configuration on the broker."""
        if self._auto_create_topics:
            self.create_topics([topic])
        actual = self._admin.inspect_topics([topic.name], timeout=self._timeout).get(topic.name)
        if actual is None:
            raise TopicNotFoundError(f"topic '{topic.name}' does not exist and auto_create_topics is off")
        return actual

    def create_topics(self, topics: List[Topic], timeout: Optional[float] = None,
                      create_timeout: Optional[float] = None) -> None:
        """Create the given topics (existing ones are left alone)."""
        affirm_ready_for_create(topics)
        self._admin.create_topics(topics, timeout=timeout or self._timeout,
                                  finalize_timeout=create_timeout or self._create_timeout)

    def create_all_topics(self, timeout: Optional[float] = None, create_timeout: Optional[float] = None) -> None:
        """Create every registered topic, unless auto_create_topics is off."""
        if self._auto_create_topics:
            self.create_topics(list(self.all_topics.values()), timeout=timeout, create_timeout=create_timeout)

    def validate_all_topics(self, timeout: Optional[float] = None) -> None:
        """Check every topic exists and changelogs have their source's partition count."""
        topics = self.all_topics
        actual = self._admin.inspect_topics(list(topics), timeout=timeout or self._timeout)
        missing = sorted(name for name, config in actual.items() if config is None)
        if missing:
            raise TopicNotFoundError(f"topics do not exist (auto_create_topics is off or creation failed): {missing}")
        problems = []
        for source, by_store in self._changelog_topics.items():
            source_cfg = actual.get(source) if source else None
            for topic in by_store.values():
                cfg = actual[topic.name]
                if cfg is not None and source_cfg is not None and cfg.num_partitions != source_cfg.num_partitions:
                    problems.append(f"changelog '{topic.name}' has {cfg.num_partitions} partitions, "
                                    f"its source '{source}' has {source_cfg.num_partitions}")
        if problems:
            raise TopicConfigurationMismatch("; ".join(problems))
        for name, topic in topics.items():
            reported = actual[name]
            if reported is not None:
                topic.broker_config = reported

"""TopicManager: every topic of an Application (inputs, outputs, repartition, changelogs)."""

from __future__ import annotations

import logging
from typing import Dict, Iterable, List, Literal, Optional, Sequence

from stream_edge.models.serializers import DeserializerType, SerializerType

from .admin import TopicAdmin
from .exceptions import TopicConfigurationMismatch, TopicNotFoundError, TopicPartitionsMismatch
from .topic import TimestampExtractor, Topic, TopicConfig, TopicType

__all__ = ("TopicManager", "affirm_ready_for_create")

logger = logging.getLogger("stream_edge")


def affirm_ready_for_create(topics: List[Topic]) -> None:
    """Every topic to create must have a config."""
    missing = [t.name for t in topics if t.config is None]
    if missing:
        raise ValueError(f"topics without a TopicConfig cannot be created: {missing}")


class TopicManager:
    """Creates, names and validates the topics of one Application.

    Topics are created when the application sets up (or a topic's ``broker_config`` is first
    read); with ``auto_create_topics=False`` a topic is looked up on the broker when it is defined
    and a missing one raises ``TopicNotFoundError``, as in Quix Streams 3.28.
    """

    default_num_partitions: Optional[int] = 1
    default_replication_factor: Optional[int] = 1
    default_extra_config: Dict[str, str] = {}
    _changelog_extra_config_defaults = {"cleanup.policy": "compact"}
    # the broker settings a Topic's broker_config keeps (as Quix Streams 3.28)
    _extra_config_imports = {"retention.bytes", "retention.ms", "cleanup.policy"}

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
    def topics(self) -> Dict[str, Topic]:
        """The regular topics, by name."""
        return self._topics

    @property
    def repartition_topics(self) -> Dict[str, Topic]:
        return self._repartition_topics

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
                           extra_config=extra_config or self.default_extra_config.copy())

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
                           extra_config=dict(config.extra_config or self.default_extra_config))

    def register(self, topic: Topic) -> Topic:
        """Register an existing Topic (a missing config, or missing counts, get the defaults).

        With ``auto_create_topics=False`` the topic must exist: ``TopicNotFoundError`` otherwise.
        """
        topic.create_config = self._complete(topic.create_config)
        topic.broker_config_loader = lambda: self._broker_config(topic)
        if not self._auto_create_topics:
            topic.broker_config = self._broker_config(topic)
        self._topics[topic.name] = topic
        return topic

    # -- derived configs and names (Quix Streams 3.28's rules) ------------------------------
    @classmethod
    def derive_topic_config(cls, topics: Iterable[Topic]) -> TopicConfig:
        """The config of an internal topic (changelog, repartition) fed by ``topics``: the largest
        partition count and replication factor, the longest ``retention.bytes`` / ``retention.ms``
        (``-1``, infinite, wins), from each topic's ``broker_config``."""
        topics = list(topics)
        if not topics:
            raise ValueError("At least one Topic must be passed")
        configs = [t.broker_config for t in topics]
        num_partitions = max(c.num_partitions for c in configs if c.num_partitions is not None)
        replication_factor = max(c.replication_factor for c in configs if c.replication_factor is not None)
        retention_bytes = [int(c.extra_config.get("retention.bytes", "-1")) for c in configs]
        retention_ms = [int(c.extra_config["retention.ms"]) for c in configs]
        return TopicConfig(num_partitions=num_partitions, replication_factor=replication_factor, extra_config={
            "retention.bytes": str(-1 if -1 in retention_bytes else max(retention_bytes)),
            "retention.ms": str(-1 if -1 in retention_ms else max(retention_ms)),
        })

    @classmethod
    def ensure_topics_copartitioned(cls, *topics: Topic) -> None:
        """Raise ``TopicPartitionsMismatch`` unless every topic has the same partition count."""
        if len({t.broker_config.num_partitions for t in topics}) > 1:
            listed = ", ".join(f'"{t.name}" ({t.broker_config.num_partitions} partitions)' for t in topics)
            raise TopicPartitionsMismatch(
                f"The underlying topics must have the same number of partitions to use State; got {listed}")

    def stream_id_from_topics(self, topics: Sequence[Topic]) -> str:
        """The stream id of a dataframe reading ``topics``: their sorted names joined by ``--``."""
        if not topics:
            raise ValueError("At least one Topic must be passed")
        return "--".join(sorted({t.name for t in topics}))

    def _format_nested_name(self, topic_name: str) -> str:
        """An internal topic's name inside another internal name loses the group:
        ``repartition__<group>--<topic>--<op>`` -> ``repartition.<topic>.<op>``."""
        if f"__{self._consumer_group}--" in topic_name:
            return topic_name.replace(f"__{self._consumer_group}", "").replace("--", ".")
        return topic_name

    def _internal_name(self, topic_type: Literal["changelog", "repartition"], stream_id: Optional[str],
                       suffix: str) -> str:
        """``<type>__<group>--<stream id>--<suffix>`` (``<type>__<group>--<suffix>`` without a stream id)."""
        parts = [self._consumer_group, suffix] if stream_id is None else \
            [self._consumer_group, self._format_nested_name(stream_id), suffix]
        return f"{topic_type}__{'--'.join(parts)}"

    def stream_topic_config(self, stream_id: str, timeout: Optional[float] = None) -> TopicConfig:
        """The config an internal topic of ``stream_id`` gets (see :meth:`_internal_config`): its
        partition count decides whether a ``group_by`` needs a repartition topic."""
        return self._internal_config(stream_id, timeout)

    def _internal_config(self, stream_id: Optional[str], timeout: Optional[float]) -> TopicConfig:
        """``derive_topic_config`` of the stream's source topics, read from the broker without
        creating them (their definition's counts when they do not exist yet)."""
        if not stream_id:
            names: List[str] = []
        elif stream_id in self.non_changelog_topics or "--" not in stream_id:
            names = [stream_id]
        else:
            names = self._stream_topic_names(stream_id)
        sources = [self._source_config(name, timeout) for name in names] or [self.topic_config()]
        extra: Dict[str, str] = {}
        if all("retention.ms" in c.extra_config for c in sources):
            derived = self.derive_topic_config([_Configured(c) for c in sources])  # type: ignore[misc]
            extra = dict(derived.extra_config)
        return TopicConfig(num_partitions=max(c.num_partitions or 1 for c in sources),
                           replication_factor=max(c.replication_factor or 1 for c in sources), extra_config=extra)

    def _stream_topic_names(self, stream_id: str) -> List[str]:
        """The topics a stream id names: itself, or those of concatenated topics ``<a>--<b>``; a
        single-partition ``group_by`` re-keys in place and adds ``--groupby--<operation>`` to the
        stream id of the topics it reads (as 3.28.1 names it)."""
        if stream_id in self.non_changelog_topics or "--" not in stream_id:
            return [stream_id]
        base = stream_id.split("--groupby--", 1)[0]
        if base in self.non_changelog_topics or "--" not in base:
            return [base]
        return base.split("--")

    def _source_config(self, topic_name: str, timeout: Optional[float]) -> TopicConfig:
        """The broker's config of a source topic, or its definition's when it does not exist yet."""
        actual = self._admin.inspect_topics([topic_name], timeout=timeout or self._timeout).get(topic_name)
        if actual is not None:
            return actual
        known = self.non_changelog_topics.get(topic_name)
        return (known.config if known is not None and known.config else self.topic_config())

    def repartition_topic(self, operation: str, stream_id: Optional[str] = None, config: Optional[TopicConfig] = None,
                          value_deserializer: Optional[DeserializerType] = "json",
                          key_deserializer: Optional[DeserializerType] = "json",
                          value_serializer: Optional[SerializerType] = "json",
                          key_serializer: Optional[SerializerType] = "json", *,
                          topic_name: Optional[str] = None, timeout: Optional[float] = None) -> Topic:
        """The internal topic a group_by() writes to and reads from,
        ``repartition__<group>--<stream id>--<operation>``; without ``config``, derived from the
        source topics (``derive_topic_config``). ``topic_name`` is an older name of ``stream_id``."""
        stream_id = stream_id if stream_id is not None else topic_name
        if config is None:
            config = self._internal_config(stream_id, timeout)
        topic = Topic(self._internal_name("repartition", stream_id, operation), TopicType.REPARTITION, config,
                      value_deserializer=value_deserializer, key_deserializer=key_deserializer,
                      value_serializer=value_serializer, key_serializer=key_serializer)
        topic.broker_config_loader = lambda: self._broker_config(topic)
        self._repartition_topics[topic.name] = topic
        return topic

    def changelog_topic(self, stream_id: Optional[str] = None, store_name: str = "default",
                        config: Optional[TopicConfig] = None, *, topic_name: Optional[str] = None,
                        timeout: Optional[float] = None) -> Topic:
        """The compacted changelog of a state store, ``changelog__<group>--<stream id>--<store>``:
        ``config`` (derived from the source topics when not given) plus ``cleanup.policy=compact``,
        as Quix Streams 3.28 builds it. ``topic_name`` is an older name of ``stream_id``."""
        stream_id = stream_id if stream_id is not None else topic_name
        if config is None:
            config = self._internal_config(stream_id, timeout)
        config.extra_config.update(self._changelog_extra_config_defaults)
        topic = Topic(self._internal_name("changelog", stream_id, store_name), TopicType.CHANGELOG, config,
                      value_deserializer="bytes", key_deserializer="bytes", value_serializer="bytes",
                      key_serializer="bytes")
        topic.broker_config_loader = lambda: self._broker_config(topic)
        # As 3.28.1: the changelog is created (when allowed) and inspected now; one that exists with
        # another partition count is refused before it is registered.
        _check_changelog_partitions(topic, config.num_partitions, topic.broker_config.num_partitions)
        self._changelog_topics.setdefault(stream_id, {})[store_name] = topic
        return topic

    # -- broker side ------------------------------------------------------------------------
    def _broker_config(self, topic: Topic) -> TopicConfig:
        """Create ``topic`` if allowed and missing, then return its configuration on the broker."""
        if self._auto_create_topics:
            self.create_topics([topic])
        actual = self._admin.inspect_topics([topic.name], timeout=self._timeout).get(topic.name)
        if actual is None:
            raise TopicNotFoundError(f'Topic "{topic.name}" not found on the broker')
        return self._imported(actual)

    def _imported(self, config: TopicConfig) -> TopicConfig:
        """The broker's config reduced to what a Topic keeps (counts, retention, cleanup policy)."""
        return TopicConfig(num_partitions=config.num_partitions, replication_factor=config.replication_factor,
                           extra_config={k: v for k, v in config.extra_config.items()
                                         if k in self._extra_config_imports})

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
        # Each changelog has one partition per partition of its stream's topics (several for
        # concat/joins: they are co-partitioned, the largest count counts as derive_topic_config's).
        for stream_id, by_store in self._changelog_topics.items():
            sources = [actual.get(name) for name in self._stream_topic_names(stream_id or "")]
            counts = [c.num_partitions for c in sources if c is not None and c.num_partitions is not None]
            for topic in by_store.values():
                cfg = actual[topic.name]
                create_config = topic.create_config
                expected = max(counts) if counts else (create_config.num_partitions if create_config else None)
                if cfg is not None:
                    _check_changelog_partitions(topic, expected, cfg.num_partitions)
        for name, topic in topics.items():
            reported = actual[name]
            if reported is not None:
                topic.broker_config = self._imported(reported)


def _check_changelog_partitions(topic: Topic, expected: Optional[int], actual: Optional[int]) -> None:
    """Raise ``TopicConfigurationMismatch`` (3.28.1's message, closing quote included) when a
    changelog has another partition count than its stream needs."""
    if expected is not None and actual != expected:
        raise TopicConfigurationMismatch(f'Invalid partition count for the changelog topic "{topic.name}": '
                                         f'expected {expected}, got {actual}"')


class _Configured:
    """A stand-in Topic carrying only a ``broker_config`` (for ``derive_topic_config``)."""

    def __init__(self, config: TopicConfig) -> None:
        self.broker_config = config

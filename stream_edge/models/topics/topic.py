"""Topic and TopicConfig: a Kafka topic's name, creation settings and (de)serializers."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Callable, List, Optional, Union

from confluent_kafka.admin import NewTopic

from stream_edge.models.messagecontext import MessageContext
from stream_edge.models.rows import Row
from stream_edge.models.serializers import (BytesDeserializer, BytesSerializer, DeserializerType,
                                            IgnoreMessage, MessageField, SerializationContext,
                                            SerializationError, SerializerIsNotProvidedError,
                                            SerializerType, resolve_deserializer, resolve_serializer)
from stream_edge.models.timestamps import TimestampExtractor, TimestampType

from .exceptions import TopicConfigurationError, TopicNameLengthExceeded
from .utils import merge_headers

__all__ = ("Topic", "TopicConfig", "TopicType", "TimestampExtractor", "KafkaMessage")

MAX_TOPIC_NAME_LENGTH = 249


@dataclasses.dataclass(eq=True)
class TopicConfig:
    """Creation settings of a topic.

    >>> TopicConfig(num_partitions=2, replication_factor=1, extra_config={"retention.ms": "-1"}).num_partitions
    2
    """

    num_partitions: Optional[int] = 1
    replication_factor: Optional[int] = 1
    extra_config: dict = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class TopicType(enum.Enum):
    """What a topic is for: the application's own (regular) or internal to an operation."""

    REGULAR = 1
    REPARTITION = 2
    CHANGELOG = 3


@dataclasses.dataclass
class KafkaMessage:
    """A serialized message ready to produce."""

    key: Any
    value: Any
    headers: Any = None
    timestamp: Optional[int] = None


def _fast_call(obj: Any, topic: str, field: str, consumed: bool = False) -> Optional[Callable[[Any], Any]]:
    """One-argument form of a (de)serializer; None means "use the bytes/object as is".

    A deserializer without a ``fast`` form (custom ones, the Quix formats) gets a context holding
    the consumed message's headers, as Quix passes them; built-in ones never pay for that.
    """
    if obj is None or getattr(obj, "passthrough", False):
        return None
    fast = getattr(obj, "fast", None)
    if fast is not None:
        return fast
    if consumed:
        return lambda data: obj(data, SerializationContext(topic, field, _consumed_headers()))
    ctx = SerializationContext(topic, field)
    return lambda data: obj(data, ctx)


def _consumed_headers() -> Any:
    """Headers of the message the running application is processing (None outside processing)."""
    from stream_edge.processing.cursor import active_cursor

    cursor = active_cursor()
    msg = None if cursor is None else cursor.message
    headers = getattr(msg, "headers", None)
    return headers() if callable(headers) else headers


class Topic:
    """A Kafka topic definition.

    ``create_config`` is what the topic is created with (None: the TopicManager's defaults);
    ``broker_config`` is what the broker reports for it once the application has set its topics
    up (``app.setup_topics()``, done by ``run()``). ``config=`` is accepted as an older name of
    ``create_config``.

    Example::

        topic = Topic("events", value_deserializer="json", value_serializer="json",
                      create_config=TopicConfig(num_partitions=2, replication_factor=1))
    """

    def __init__(self, name: str, topic_type: TopicType = TopicType.REGULAR,
                 create_config: Optional[TopicConfig] = None,
                 value_deserializer: Optional[DeserializerType] = None,
                 key_deserializer: Optional[DeserializerType] = BytesDeserializer(),
                 value_serializer: Optional[SerializerType] = None,
                 key_serializer: Optional[SerializerType] = BytesSerializer(),
                 timestamp_extractor: Optional[TimestampExtractor] = None, quix_name: str = "", *,
                 config: Optional[TopicConfig] = None) -> None:
        if config is not None and create_config is not None and config != create_config:
            raise ValueError(f"topic '{name}': give create_config or config (its older name), not both")
        if topic_type is not None and not isinstance(topic_type, TopicType):  # None: left unset, as Quix allows
            raise TypeError(f"topic '{name}': topic_type must be a TopicType, got {topic_type!r} "
                            f"(pass the config as create_config=...)")
        config = create_config if create_config is not None else config
        if not name:
            raise ValueError("a topic needs a name")
        if len(name) > MAX_TOPIC_NAME_LENGTH:
            raise TopicNameLengthExceeded(f"topic name '{name[:40]}...' is longer than {MAX_TOPIC_NAME_LENGTH} characters")
        self.name = name
        self.quix_name = quix_name or name
        self._type = topic_type
        self.create_config: Optional[TopicConfig] = config
        self._broker_config: Optional[TopicConfig] = None
        # Set by the TopicManager: creates (if allowed) and inspects the topic on first access.
        self.broker_config_loader: Optional[Callable[[], TopicConfig]] = None
        self._value_deserializer = resolve_deserializer(value_deserializer)
        self._key_deserializer = resolve_deserializer(key_deserializer)
        self._value_serializer = resolve_serializer(value_serializer)
        self._key_serializer = resolve_serializer(key_serializer)
        self._timestamp_extractor = timestamp_extractor
        # Hot-path forms: one-argument functions, None = use as is.
        self.value_loads = _fast_call(self._value_deserializer, name, MessageField.VALUE, consumed=True)
        self.key_loads = _fast_call(self._key_deserializer, name, MessageField.KEY, consumed=True)
        self.value_dumps = _fast_call(self._value_serializer, name, MessageField.VALUE)
        self.key_dumps = _fast_call(self._key_serializer, name, MessageField.KEY)
        self.split_values = bool(getattr(self._value_deserializer, "split_values", False))

    # -- accessors --------------------------------------------------------------------------
    @property
    def config(self) -> Optional[TopicConfig]:
        """The creation config (older name of :attr:`create_config`)."""
        return self.create_config

    @config.setter
    def config(self, value: Optional[TopicConfig]) -> None:
        self.create_config = value

    @property
    def broker_config(self) -> TopicConfig:
        """The topic's configuration as the broker reports it.

        Asked before the application set its topics up, the topic is created (when the
        application may create topics) and inspected now, as Quix Streams does at ``app.topic()``.
        """
        if self._broker_config is None:
            if self.broker_config_loader is None:
                raise TopicConfigurationError(f'The broker topic configuration is missing for the topic "{self.name}"')
            self._broker_config = self.broker_config_loader()
        return self._broker_config

    @broker_config.setter
    def broker_config(self, value: TopicConfig) -> None:
        self._broker_config = value

    def __clone__(self, name: str, create_config: Optional[TopicConfig] = None) -> "Topic":
        """A copy of this topic's definition under another name (Quix's ``__clone__``)."""
        return type(self)(name, self._type, create_config or self.create_config,
                          value_deserializer=self._value_deserializer, key_deserializer=self._key_deserializer,
                          value_serializer=self._value_serializer, key_serializer=self._key_serializer,
                          timestamp_extractor=self._timestamp_extractor, quix_name=self.quix_name)

    @property
    def is_regular(self) -> bool:
        return self._type is TopicType.REGULAR

    @property
    def is_repartition(self) -> bool:
        return self._type is TopicType.REPARTITION

    @property
    def is_changelog(self) -> bool:
        return self._type is TopicType.CHANGELOG

    @property
    def value_deserializer(self): return self._value_deserializer
    @property
    def key_deserializer(self): return self._key_deserializer
    @property
    def value_serializer(self): return self._value_serializer
    @property
    def key_serializer(self): return self._key_serializer
    @property
    def timestamp_extractor(self) -> Optional[TimestampExtractor]: return self._timestamp_extractor

    @property
    def extra_headers(self) -> dict:
        """Headers the value/key serializers ask to add to each produced message."""
        headers: dict = {}
        for ser in (self._key_serializer, self._value_serializer):
            extra = getattr(ser, "extra_headers", None)
            if extra:
                headers.update(extra)
        return headers

    def as_newtopic(self) -> NewTopic:
        """The confluent-kafka NewTopic for AdminClient.create_topics()."""
        config = self.config or TopicConfig()
        return NewTopic(self.name, num_partitions=config.num_partitions or 1,
                        replication_factor=config.replication_factor or 1,
                        config={k: str(v) for k, v in (config.extra_config or {}).items()})

    # -- slow-path (de)serialization, for programs that call these directly ------------------
    def serialize(self, key: Any = None, value: Any = None, headers: Any = None,
                  timestamp_ms: Optional[int] = None) -> KafkaMessage:
        """Serialize a key and value with this topic's serializers (e.g. in a custom source).

        >>> Topic("t", value_serializer="json").serialize(key=b"k", value={"a": 1}).value
        b'{"a":1}'
        """
        if self._value_serializer is None:
            raise SerializerIsNotProvidedError(f"topic '{self.name}' has no value serializer")
        if self._key_serializer is not None and key is not None:
            key = self._key_serializer(key, SerializationContext(self.name, MessageField.KEY, headers))
        value = self._value_serializer(value, SerializationContext(self.name, MessageField.VALUE, headers))
        return KafkaMessage(key=key, value=value, headers=headers, timestamp=timestamp_ms)

    def deserialize(self, message: Any) -> Union[Row, List[Row], None]:
        """Deserialize a Kafka message (same as :meth:`row_deserialize`)."""
        return self.row_deserialize(message)

    def row_serialize(self, row: Row, key: Any) -> KafkaMessage:
        """Serialize a Row (and a key) to a KafkaMessage, as Quix Streams 3.28.1 does: a None key
        stays None, the headers are the row's (``[]`` for none) merged with the value serializer's
        ``extra_headers``, and the message carries no timestamp (the producer takes the row's)."""
        if self._value_serializer is None:
            raise SerializerIsNotProvidedError(f"topic '{self.name}' has no value serializer")
        if key is not None and self._key_serializer is not None:
            key = self._key_serializer(key, SerializationContext(self.name, MessageField.KEY, row.headers))
        extra = getattr(self._value_serializer, "extra_headers", None)
        headers = merge_headers(row.headers, extra) if extra else (row.headers or [])
        value = self._value_serializer(row.value, SerializationContext(self.name, MessageField.VALUE, row.headers))
        return KafkaMessage(key=key, value=value, headers=headers)

    def row_deserialize(self, message: Any) -> Union[Row, List[Row], None]:
        """Deserialize a Kafka message to a Row (a list with ``split_values``), None if ignored."""
        value, key, headers = message.value(), message.key(), message.headers()
        try:
            if self._value_deserializer is not None and value is not None:
                value = self._value_deserializer(value, SerializationContext(self.name, MessageField.VALUE, headers))
            if self._key_deserializer is not None and key is not None:
                key = self._key_deserializer(key, SerializationContext(self.name, MessageField.KEY, headers))
        except IgnoreMessage:
            return None
        except Exception as exc:
            raise SerializationError(
                f"cannot deserialize message at topic '{message.topic()}' partition {message.partition()} "
                f"offset {message.offset()}: {exc}") from exc
        ts_type, ts = message.timestamp()
        extractor = self._timestamp_extractor
        raw = message.value()
        ctx = MessageContext(message.topic(), message.partition(), message.offset(),
                             len(raw) if raw is not None else 0, message.leader_epoch())
        if self.split_values and value is not None:
            # as in Quix Streams 3.28.1: the extractor sees each item, and the timestamp it
            # returned for the previous item
            rows = []
            for item in value:
                if extractor is not None:
                    ts = extractor(item, headers, ts, TimestampType(ts_type))
                rows.append(Row(item, key, ts, ctx, headers))
            return rows
        if extractor is not None:
            ts = extractor(value, headers, ts, TimestampType(ts_type))
        return Row(value, key, ts, ctx, headers)

    def __repr__(self) -> str:
        return f'<Topic name="{self.name}">'


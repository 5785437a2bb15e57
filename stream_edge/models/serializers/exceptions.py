"""Serialization errors.

``SerializationError`` is, as in Quix Streams 3.28, both a library exception and confluent-kafka's
``SerializationError`` (itself a ``KafkaException``), so ``except KafkaException`` catches it too.
"""

from typing import Tuple, Type

from stream_edge.exceptions.base import StreamEdgeException

__all__ = ("SerializationError", "IgnoreMessage", "SerializerIsNotProvidedError", "UnknownSerializerError",
           "KeySerializationError", "KeyDeserializationError", "ValueSerializationError",
           "ValueDeserializationError")


def _kafka_bases() -> Tuple[Type[BaseException], ...]:
    try:
        from confluent_kafka.serialization import SerializationError as KafkaSerializationError
    except ImportError:  # confluent-kafka missing: the plain library exception is enough
        return ()
    return (KafkaSerializationError,)


class SerializationError(StreamEdgeException, *_kafka_bases()):  # type: ignore[misc]
    """A value or key could not be (de)serialized; the message names the record."""


class KeySerializationError(SerializationError):
    """A key could not be serialized."""


class KeyDeserializationError(SerializationError):
    """A key could not be deserialized."""


class ValueSerializationError(SerializationError):
    """A value could not be serialized."""


class ValueDeserializationError(SerializationError):
    """A value could not be deserialized."""


class SerializerIsNotProvidedError(SerializationError):
    """A topic has no serializer for the field being produced."""


class UnknownSerializerError(ValueError):
    """A serializer or deserializer was asked for by an unknown name."""


class IgnoreMessage(Exception):
    """Raise from a Deserializer to skip the message (its offset is still committed)."""

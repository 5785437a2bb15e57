"""Serializers and deserializers, selectable by name or instance.

Names: ``"json"``, ``"bytes"``, ``"str"``, ``"int"``, ``"double"``, ``"quix"``, ``"quix_timeseries"``,
``"quix_events"``. Avro and Protobuf live in their modules (``.avro``, ``.protobuf``: optional packages).

>>> resolve_deserializer("json").__class__.__name__
'JSONDeserializer'
"""

from __future__ import annotations

from typing import Any, Optional, Union

from .base import Deserializer, MessageField, SerializationContext, Serializer
from .exceptions import (IgnoreMessage, KeyDeserializationError, KeySerializationError, SerializationError,
                         SerializerIsNotProvidedError, UnknownSerializerError, ValueDeserializationError,
                         ValueSerializationError)
from .json import JSONDeserializer, JSONSerializer
from .quix import QuixDeserializer, QuixEventsSerializer, QuixTimeseriesSerializer
from .schema_registry import SchemaRegistryClientConfig, SchemaRegistrySerializationConfig
from .simple_types import (BytesDeserializer, BytesSerializer, DoubleDeserializer, DoubleSerializer,
                           IntegerDeserializer, IntegerSerializer, StringDeserializer, StringSerializer)

SerializerType = Union[str, Serializer]
DeserializerType = Union[str, Deserializer]

SERIALIZERS = {"json": JSONSerializer, "bytes": BytesSerializer, "str": StringSerializer,
               "string": StringSerializer, "int": IntegerSerializer, "integer": IntegerSerializer, "double": DoubleSerializer,
               "quix_timeseries": QuixTimeseriesSerializer, "quix_events": QuixEventsSerializer}
DESERIALIZERS = {"json": JSONDeserializer, "bytes": BytesDeserializer, "str": StringDeserializer,
                 "string": StringDeserializer, "int": IntegerDeserializer, "integer": IntegerDeserializer, "double": DoubleDeserializer,
                 "quix": QuixDeserializer}

__all__ = (
    "BytesDeserializer", "BytesSerializer", "Deserializer", "DeserializerType", "DoubleDeserializer",
    "DoubleSerializer", "IgnoreMessage", "IntegerDeserializer", "IntegerSerializer", "JSONDeserializer",
    "JSONSerializer", "KeyDeserializationError", "KeySerializationError", "MessageField",
    "QuixDeserializer", "QuixEventsSerializer", "QuixTimeseriesSerializer", "SchemaRegistryClientConfig",
    "SchemaRegistrySerializationConfig", "ValueDeserializationError", "ValueSerializationError", "SerializationContext", "SerializationError", "Serializer",
    "SerializerIsNotProvidedError", "SerializerType", "StringDeserializer", "StringSerializer",
    "UnknownSerializerError", "resolve_deserializer", "resolve_serializer",
)


def _resolve(spec: Any, table: dict, base: type, kind: str) -> Any:
    if spec is None or isinstance(spec, base):
        return spec
    if isinstance(spec, str):
        try:
            return table[spec]()
        except KeyError:
            raise UnknownSerializerError(
                f"unknown {kind} name {spec!r}; use one of {sorted(set(table) - {'string', 'integer'})} "
                f"or a {base.__name__} instance") from None
    if callable(spec):  # a plain callable (value, ctx) is accepted as is
        return spec
    raise UnknownSerializerError(f"a {kind} must be a name or a {base.__name__} instance, got {spec!r}")


def resolve_serializer(spec: Optional[SerializerType]) -> Optional[Serializer]:
    """A Serializer from a name (``"json"``...) or an instance; unknown names raise clearly."""
    return _resolve(spec, SERIALIZERS, Serializer, "serializer")


def resolve_deserializer(spec: Optional[DeserializerType]) -> Optional[Deserializer]:
    """A Deserializer from a name (``"json"``...) or an instance; unknown names raise clearly."""
    return _resolve(spec, DESERIALIZERS, Deserializer, "deserializer")

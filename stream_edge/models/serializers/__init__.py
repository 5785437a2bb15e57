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

# Names in Quix Streams' order: the error for an unknown name lists them as 3.28.1 does.
SERIALIZERS = {"str": StringSerializer, "string": StringSerializer, "bytes": BytesSerializer,
               "double": DoubleSerializer, "int": IntegerSerializer, "integer": IntegerSerializer,
               "json": JSONSerializer, "quix_timeseries": QuixTimeseriesSerializer,
               "quix_events": QuixEventsSerializer}
DESERIALIZERS = {"str": StringDeserializer, "string": StringDeserializer, "bytes": BytesDeserializer,
                 "double": DoubleDeserializer, "int": IntegerDeserializer, "integer": IntegerDeserializer,
                 "json": JSONDeserializer, "quix": QuixDeserializer}

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
    """An instance from a name or an instance; the errors are worded as in Quix Streams 3.28.1
    (``UnknownSerializerError`` is a ``ValueError``, which 3.28.1 raises)."""
    if spec is None or isinstance(spec, base):
        return spec
    if isinstance(spec, str):
        try:
            return table[spec]()
        except KeyError:
            raise UnknownSerializerError(
                f'Unknown {kind} option "{spec}"; valid options are {list(table)}') from None
    if callable(spec):  # a plain callable (value, ctx) is accepted as is
        return spec
    raise UnknownSerializerError(f'{kind.capitalize()} must be either one of {list(table)} or a subclass of '
                                 f'{base.__name__}; got "{spec}"')


def resolve_serializer(spec: Optional[SerializerType]) -> Optional[Serializer]:
    """A Serializer from a name (``"json"``...) or an instance; unknown names raise clearly."""
    return _resolve(spec, SERIALIZERS, Serializer, "serializer")


def resolve_deserializer(spec: Optional[DeserializerType]) -> Optional[Deserializer]:
    """A Deserializer from a name (``"json"``...) or an instance; unknown names raise clearly."""
    return _resolve(spec, DESERIALIZERS, Deserializer, "deserializer")

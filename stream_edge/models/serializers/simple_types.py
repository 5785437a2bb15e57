"""Bytes, str, int and double (de)serializers."""

from __future__ import annotations

import struct
from typing import Any, Callable, Optional

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError

__all__ = ("BytesSerializer", "BytesDeserializer", "StringSerializer", "StringDeserializer",
           "IntegerSerializer", "IntegerDeserializer", "DoubleSerializer", "DoubleDeserializer")

_int = struct.Struct(">i")   # 4-byte big-endian, as Kafka's IntegerSerializer
_double = struct.Struct(">d")


class BytesDeserializer(Deserializer):
    """Pass bytes through unchanged."""

    passthrough = True  # identity: the loop skips the call

    def __call__(self, value: bytes, ctx: SerializationContext) -> bytes:
        return value


class BytesSerializer(Serializer):
    """Pass the value through unchanged, as Quix does (librdkafka takes bytes and str and refuses
    anything else when producing)."""

    passthrough = True  # the producer gets the key/value as is

    def __call__(self, value: Any, ctx: SerializationContext) -> Any:
        return value


class StringDeserializer(Deserializer):
    """Decode bytes to str (default UTF-8)."""

    def __init__(self, codec: str = "utf_8") -> None:
        super().__init__()
        self._codec = codec

    @property
    def fast(self) -> Callable[[bytes], str]:
        codec = self._codec
        return lambda value: value.decode(codec)

    def __call__(self, value: bytes, ctx: SerializationContext) -> str:
        return value.decode(self._codec)


class StringSerializer(Serializer):
    """Encode str to bytes (default UTF-8)."""

    def __init__(self, codec: str = "utf_8") -> None:
        self._codec = codec

    @property
    def fast(self) -> Optional[Callable[[Any], bytes]]:
        return None  # keep the type check of __call__

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if not isinstance(value, str):
            raise SerializationError(f"StringSerializer needs str for topic '{ctx.topic}', got {type(value).__name__}")
        return value.encode(self._codec)


class IntegerDeserializer(Deserializer):
    """Decode a 4-byte big-endian signed integer."""

    def __call__(self, value: bytes, ctx: SerializationContext) -> int:
        try:
            return _int.unpack(value)[0]
        except struct.error as exc:
            raise SerializationError(f"not a 4-byte integer ({len(value)} bytes) on topic '{ctx.topic}'") from exc


class IntegerSerializer(Serializer):
    """Encode an int as 4-byte big-endian."""

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if not isinstance(value, int) or isinstance(value, bool):
            raise SerializationError(f"IntegerSerializer needs int for topic '{ctx.topic}', got {type(value).__name__}")
        try:
            return _int.pack(value)
        except struct.error as exc:
            raise SerializationError(f"{value} does not fit in 32 bits (topic '{ctx.topic}')") from exc


class DoubleDeserializer(Deserializer):
    """Decode an 8-byte IEEE 754 binary64 float."""

    def __call__(self, value: bytes, ctx: SerializationContext) -> float:
        try:
            return _double.unpack(value)[0]
        except struct.error as exc:
            raise SerializationError(f"not an 8-byte double ({len(value)} bytes) on topic '{ctx.topic}'") from exc


class DoubleSerializer(Serializer):
    """Encode a float as 8-byte IEEE 754 binary64."""

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise SerializationError(f"DoubleSerializer needs float for topic '{ctx.topic}', got {type(value).__name__}")
        return _double.pack(value)

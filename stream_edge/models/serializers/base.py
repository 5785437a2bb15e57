"""Serializer and Deserializer base classes.

Every (de)serializer is called as ``obj(value, ctx: SerializationContext)``. Built-in ones also
expose ``fast``: a one-argument function (or None for "pass through") that the processing loop calls
directly, so the common case costs one C call per message and builds no context object.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

__all__ = ("SerializationContext", "Serializer", "Deserializer", "MessageField")


class MessageField:
    KEY = "key"
    VALUE = "value"


class SerializationContext:
    """Where the bytes come from or go to: topic, field ("key"/"value") and headers."""

    __slots__ = ("topic", "field", "headers")

    def __init__(self, topic: str, field: str = MessageField.VALUE, headers: Any = None) -> None:
        self.topic, self.field, self.headers = topic, field, headers

    def __repr__(self) -> str:
        return f"SerializationContext(topic={self.topic!r}, field={self.field!r})"


class Deserializer:
    """Base of all deserializers: implement ``__call__(value: bytes, ctx) -> Any``."""

    passthrough = False  # True: bytes are used as they are, no call at all

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @property
    def split_values(self) -> bool:
        """True if a deserialized list must be processed as one message per item."""
        return False

    @property
    def fast(self) -> Optional[Callable[[bytes], Any]]:
        """A one-argument equivalent of ``__call__`` if one exists, else None."""
        return None

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement __call__(value, ctx)")


class Serializer:
    """Base of all serializers: implement ``__call__(value, ctx) -> bytes``."""

    passthrough = False

    @property
    def extra_headers(self) -> Mapping[str, Any]:
        """Headers to add to every message this serializer produces."""
        return {}

    @property
    def fast(self) -> Optional[Callable[[Any], Any]]:
        """A one-argument equivalent of ``__call__`` if one exists, else None."""
        return None

    def __call__(self, value: Any, ctx: SerializationContext) -> Any:  # pragma: no cover - abstract
        raise TypeError(f"{type(self).__name__} must implement __call__(value, ctx)")

"""Serialization errors."""

__all__ = ("SerializationError", "IgnoreMessage", "SerializerIsNotProvidedError", "UnknownSerializerError")


class SerializationError(Exception):
    """A value or key could not be (de)serialized; the message names the record."""


class SerializerIsNotProvidedError(SerializationError):
    """A topic has no serializer for the field being produced."""


class UnknownSerializerError(ValueError):
    """A serializer or deserializer was asked for by an unknown name."""


class IgnoreMessage(Exception):
    """Raise from a Deserializer to skip the message (its offset is still committed)."""

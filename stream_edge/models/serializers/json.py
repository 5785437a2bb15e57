"""JSON (de)serialization with orjson, optionally validated with a JSON schema."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Union

import orjson

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError

__all__ = ("JSONSerializer", "JSONDeserializer", "default_dumps", "default_loads")

default_dumps = orjson.dumps
default_loads = orjson.loads


def _refuse_registry(kind: str, **settings: Any) -> None:
    """Schema Registry settings are not supported by stream_edge's JSON serializers: refuse them
    instead of ignoring them (messages would silently lack the registry's wire format)."""
    given = sorted(name for name, value in settings.items() if value is not None)
    if given:
        raise NotImplementedError(
            f"{kind}: {', '.join(given)} given, but stream_edge's JSON serializers do not support a Schema "
            f"Registry yet; drop the setting(s) (plain JSON, optionally validated with schema=...)")


def _make_validator(schema: Optional[Mapping], validator: Any) -> Any:
    if validator is not None:
        return validator
    if schema is None:
        return None
    try:
        from jsonschema import Draft202012Validator
    except ImportError as exc:  # jsonschema is optional: say what to install
        raise ImportError("JSON schema validation needs the 'jsonschema' package") from exc
    return Draft202012Validator(schema)


class JSONSerializer(Serializer):
    """Serialize values to JSON bytes.

    >>> JSONSerializer()({"a": 1}, SerializationContext("t"))
    b'{"a":1}'
    """

    def __init__(self, dumps: Callable[[Any], Union[str, bytes]] = default_dumps, schema: Optional[Mapping] = None,
                 validator: Any = None, schema_registry_client_config: Any = None,
                 schema_registry_serialization_config: Any = None) -> None:
        _refuse_registry("JSONSerializer", schema_registry_client_config=schema_registry_client_config,
                         schema_registry_serialization_config=schema_registry_serialization_config)
        self._dumps = dumps
        self._validator = _make_validator(schema, validator)

    @property
    def fast(self) -> Optional[Callable[[Any], Union[str, bytes]]]:
        return self._dumps if self._validator is None and self._dumps is default_dumps else None

    def __call__(self, value: Any, ctx: SerializationContext) -> Union[str, bytes]:
        if self._validator is not None:
            try:
                self._validator.validate(value)
            except Exception as exc:  # the message is the validator's (as in Quix Streams)
                raise SerializationError(str(exc)) from exc
        try:
            data = self._dumps(value)
        except (TypeError, ValueError) as exc:
            raise SerializationError(str(exc)) from exc
        return data  # a str from a custom dumps goes to Kafka as is (librdkafka encodes it), as in Quix


class JSONDeserializer(Deserializer):
    """Parse JSON bytes.

    >>> JSONDeserializer()(b'{"a":1}', SerializationContext("t"))
    {'a': 1}
    """

    def __init__(self, loads: Callable[[Union[bytes, bytearray]], Any] = default_loads,
                 schema: Optional[Mapping] = None, validator: Any = None,
                 schema_registry_client_config: Any = None) -> None:
        _refuse_registry("JSONDeserializer", schema_registry_client_config=schema_registry_client_config)
        super().__init__()
        self._loads = loads
        self._validator = _make_validator(schema, validator)

    @property
    def fast(self) -> Optional[Callable[[bytes], Any]]:
        return self._loads if self._validator is None else None

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        try:
            data = self._loads(value)
            if self._validator is not None:
                self._validator.validate(data)
        except Exception as exc:  # bad JSON or a schema violation: the runtime adds the coordinates
            raise SerializationError(str(exc)) from exc
        return data

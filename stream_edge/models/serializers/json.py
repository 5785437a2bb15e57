"""JSON (de)serialization with orjson, optionally validated with a JSON schema."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Union

import orjson

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError

__all__ = ("JSONSerializer", "JSONDeserializer", "default_dumps", "default_loads")

default_dumps = orjson.dumps
default_loads = orjson.loads


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
                 validator: Any = None, **_registry_config: Any) -> None:
        self._dumps = dumps
        self._validator = _make_validator(schema, validator)

    @property
    def fast(self) -> Optional[Callable[[Any], Union[str, bytes]]]:
        return self._dumps if self._validator is None and self._dumps is default_dumps else None

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if self._validator is not None:
            try:
                self._validator.validate(value)
            except Exception as exc:
                raise SerializationError(f"value for topic '{ctx.topic}' fails the JSON schema: {exc}") from exc
        try:
            data = self._dumps(value)
        except (TypeError, ValueError) as exc:
            raise SerializationError(f"cannot serialize {type(value).__name__} to JSON for topic '{ctx.topic}': {exc}") from exc
        return data.encode() if isinstance(data, str) else data


class JSONDeserializer(Deserializer):
    """Parse JSON bytes.

    >>> JSONDeserializer()(b'{"a":1}', SerializationContext("t"))
    {'a': 1}
    """

    def __init__(self, loads: Callable[[Union[bytes, bytearray]], Any] = default_loads,
                 schema: Optional[Mapping] = None, validator: Any = None, **_registry_config: Any) -> None:
        super().__init__()
        self._loads = loads
        self._validator = _make_validator(schema, validator)

    @property
    def fast(self) -> Optional[Callable[[bytes], Any]]:
        return self._loads if self._validator is None else None

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        data = self._loads(value)
        if self._validator is not None:
            self._validator.validate(data)
        return data

"""JSON (de)serialization with orjson, optionally validated with a JSON schema, optionally through a
Confluent Schema Registry (``schema_registry_client_config``): then the work is
``confluent_kafka.schema_registry.json_schema``'s (the schema registered as type ``JSON``, every
message starting with the 5-byte registry header, validated against the schema), as in Quix."""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Optional, Union

import orjson

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError
from .schema_registry import (SchemaRegistryClientConfig, SchemaRegistrySerializationConfig, check_registry_settings,
                              registry_client, registry_errors, registry_module, serializer_conf)

__all__ = ("JSONSerializer", "JSONDeserializer", "default_dumps", "default_loads")

default_dumps = orjson.dumps
default_loads = orjson.loads


def _make_validator(schema: Optional[Mapping], validator: Any) -> Any:
    if validator is not None:
        if hasattr(validator, "check_schema") and hasattr(validator, "schema"):
            validator.check_schema(validator.schema)  # jsonschema's SchemaError at construction, as in Quix
        return validator
    if schema is None:
        return None
    try:
        from jsonschema import Draft202012Validator
    except ImportError as exc:  # jsonschema is optional: say what to install
        raise ImportError("JSON schema validation needs the 'jsonschema' package") from exc
    # an invalid schema is refused at construction with jsonschema's SchemaError, as in Quix
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


class JSONSerializer(Serializer):
    """Serialize values to JSON bytes.

    >>> JSONSerializer()({"a": 1}, SerializationContext("t"))
    b'{"a":1}'
    """

    def __init__(self, dumps: Callable[[Any], Union[str, bytes]] = default_dumps, schema: Optional[Mapping] = None,
                 validator: Any = None, schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
                 schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None) -> None:
        check_registry_settings("JSONSerializer", schema_registry_client_config, schema_registry_serialization_config)
        self._dumps = dumps
        self._validator = _make_validator(schema, validator)
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            if schema is None:
                raise ValueError("JSONSerializer: a Schema Registry needs `schema` (the JSON schema to register)")
            self._registry = registry_module("json_schema").JSONSerializer(
                json.dumps(schema), registry_client(schema_registry_client_config),
                conf=serializer_conf("JSONSerializer", schema_registry_serialization_config, "JSON"))

    @property
    def fast(self) -> Optional[Callable[[Any], Union[str, bytes]]]:
        if self._registry is not None:
            return None
        return self._dumps if self._validator is None and self._dumps is default_dumps else None

    def __call__(self, value: Any, ctx: SerializationContext) -> Union[str, bytes]:
        if self._registry is not None:  # validates against the schema and frames the message itself
            return registry_errors("JSONSerializer", self._registry_config, self._registry, value, ctx)  # type: ignore[arg-type]
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
                 schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None) -> None:
        check_registry_settings("JSONDeserializer", schema_registry_client_config)
        super().__init__()
        self._loads = loads
        self._validator = _make_validator(schema, validator)
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            # the writer's schema comes from the registry by the message's id (and validates it)
            self._registry = registry_module("json_schema").JSONDeserializer(
                json.dumps(schema) if schema is not None else None,
                schema_registry_client=registry_client(schema_registry_client_config))

    @property
    def fast(self) -> Optional[Callable[[bytes], Any]]:
        return self._loads if self._validator is None and self._registry is None else None

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        if self._registry is not None:
            return registry_errors("JSONDeserializer", self._registry_config, self._registry, value, ctx)  # type: ignore[arg-type]
        try:
            data = self._loads(value)
            if self._validator is not None:
                self._validator.validate(data)
        except Exception as exc:  # bad JSON or a schema violation: the runtime adds the coordinates
            raise SerializationError(str(exc)) from exc
        return data

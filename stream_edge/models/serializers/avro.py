"""Avro (de)serializers (fastavro), optionally through a Confluent Schema Registry.

Without a registry the bytes are fastavro's schemaless encoding; with one
(``schema_registry_client_config``) the work is ``confluent_kafka.schema_registry.avro``'s, as in
Quix: the Confluent header (magic byte 0 + schema id) comes first and the writer's schema comes
from the registry. fastavro is optional: it is imported when a serializer is created, and its
absence names the extra to install (``edge-avro``).
"""

from __future__ import annotations

import io
import json
from typing import Any, Dict, List, Optional, Union

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError
from .schema_registry import (SchemaRegistryClientConfig, SchemaRegistrySerializationConfig, check_registry_settings,
                              registry_client, registry_errors, registry_module, serializer_conf)

__all__ = ("AvroSerializer", "AvroDeserializer")

AvroSchema = Union[str, List[Any], Dict[Any, Any]]


def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError as exc:
        raise ImportError("Avro serializers need fastavro: pip install 'streaming-lakehouse[edge-avro]'") from exc
    return fastavro


def _parse(fastavro: Any, schema: AvroSchema, what: str) -> Any:
    """fastavro's parsed schema; a str is a type name (as in Quix Streams), registry text is JSON."""
    if what != "schema" and isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as exc:
            raise SerializationError(f"invalid Avro {what}: {exc}") from exc
    return fastavro.parse_schema(schema)


class AvroSerializer(Serializer):
    """Serialize values to Avro (fastavro's ``schemaless_writer``).

    >>> s = AvroSerializer({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    >>> s({"a": 1}, SerializationContext("t"))
    b'\\x02'
    """

    def __init__(self, schema: AvroSchema, strict: bool = False, strict_allow_default: bool = False,
                 disable_tuple_notation: bool = False,
                 schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
                 schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None) -> None:
        check_registry_settings("AvroSerializer", schema_registry_client_config, schema_registry_serialization_config)
        self._fastavro = _fastavro()
        self._schema = _parse(self._fastavro, schema, "schema")
        self._options = {"strict": strict, "strict_allow_default": strict_allow_default,
                         "disable_tuple_notation": disable_tuple_notation}
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            self._registry = registry_module("avro").AvroSerializer(
                registry_client(schema_registry_client_config), json.dumps(schema),
                conf=serializer_conf("AvroSerializer", schema_registry_serialization_config, "AVRO"))

    def _write(self, value: Any, schema: Any) -> bytes:
        out = io.BytesIO()
        try:
            self._fastavro.schemaless_writer(out, schema, value, **self._options)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise SerializationError(str(exc)) from exc
        return out.getvalue()

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        if self._registry is None:
            return self._write(value, self._schema)
        return registry_errors("AvroSerializer", self._registry_config, self._registry, value, ctx)  # type: ignore[arg-type]


class AvroDeserializer(Deserializer):
    """Parse Avro bytes (fastavro's ``schemaless_reader``); with a registry, the writer's schema comes
    from the registry by the id in the message header.

    >>> d = AvroDeserializer({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    >>> d(b'\\x02', SerializationContext("t"))
    {'a': 1}
    """

    def __init__(self, schema: Optional[AvroSchema] = None, reader_schema: Optional[AvroSchema] = None,
                 return_record_name: bool = False, return_record_name_override: bool = False,
                 return_named_type: bool = False, return_named_type_override: bool = False,
                 handle_unicode_errors: str = "strict",
                 schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None) -> None:
        super().__init__()
        if schema is None and schema_registry_client_config is None:
            raise ValueError("Either `schema` or `schema_registry_client_config` must be provided.")
        check_registry_settings("AvroDeserializer", schema_registry_client_config)
        self._fastavro = _fastavro()
        self._schema = _parse(self._fastavro, schema, "schema") if schema is not None else None
        self._reader_schema = _parse(self._fastavro, reader_schema, "reader_schema") if reader_schema is not None else None
        self._options = {"return_record_name": return_record_name,
                         "return_record_name_override": return_record_name_override,
                         "return_named_type": return_named_type,
                         "return_named_type_override": return_named_type_override,
                         "handle_unicode_errors": handle_unicode_errors}
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            # the writer's schema comes from the registry by the message's id; ours reads it
            reader = reader_schema if reader_schema is not None else schema
            self._registry = registry_module("avro").AvroDeserializer(
                registry_client(schema_registry_client_config),
                schema_str=json.dumps(reader) if reader is not None else None,
                return_record_name=return_record_name)

    def _read(self, data: bytes, writer_schema: Any, reader_schema: Any) -> Any:
        try:
            return self._fastavro.schemaless_reader(io.BytesIO(data), writer_schema, reader_schema, **self._options)
        except (EOFError, StopIteration, TypeError, ValueError, KeyError, IndexError, UnicodeDecodeError) as exc:
            raise SerializationError(str(exc) or f"truncated or malformed Avro data ({type(exc).__name__})") from exc

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        if self._registry is None:
            return self._read(value, self._schema, self._reader_schema)
        return registry_errors("AvroDeserializer", self._registry_config, self._registry, value, ctx)  # type: ignore[arg-type]

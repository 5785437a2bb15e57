"""Protobuf (de)serializers, optionally through a Confluent Schema Registry.

With a registry (``schema_registry_client_config``) the work is
``confluent_kafka.schema_registry.protobuf``'s, as in Quix: a message is framed as Confluent does
(magic byte 0, the schema id, the message indexes, then the message), the schema registered is the
message's .proto file with its imports registered first as references (``google/protobuf/*``
skipped with ``skip_known_types``; ``use_deprecated_format`` as Confluent defines it). protobuf is
optional: its absence names the extra to install (``edge-protobuf``).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple, Type

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError
from .schema_registry import (SchemaRegistryClientConfig, SchemaRegistrySerializationConfig, check_registry_settings,
                              registry_client, registry_errors, registry_module, serializer_conf)

__all__ = ("ProtobufSerializer", "ProtobufDeserializer")


def _protobuf() -> Tuple[Any, Any]:
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
    except ImportError as exc:
        raise ImportError("Protobuf serializers need protobuf: pip install 'streaming-lakehouse[edge-protobuf]'") from exc
    return json_format, DecodeError


class ProtobufSerializer(Serializer):
    """Serialize a dict (or a ``msg_type`` instance) to Protobuf bytes."""

    def __init__(self, msg_type: Type[Any], deterministic: bool = False, ignore_unknown_fields: bool = False,
                 schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
                 schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None) -> None:
        check_registry_settings("ProtobufSerializer", schema_registry_client_config,
                                schema_registry_serialization_config)
        self._json_format, _ = _protobuf()
        self._msg_type = msg_type
        self._deterministic = deterministic
        self._ignore_unknown_fields = ignore_unknown_fields
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            self._registry = registry_module("protobuf").ProtobufSerializer(
                msg_type, registry_client(schema_registry_client_config),
                conf=serializer_conf("ProtobufSerializer", schema_registry_serialization_config, "PROTOBUF"))

    def _to_message(self, value: Any) -> Any:
        if isinstance(value, self._msg_type):
            return value
        if not isinstance(value, dict):
            raise SerializationError(f"Value to serialize must be of type `{self._msg_type}` or dict, "
                                     f"not `{type(value)}`.")
        try:
            return self._json_format.ParseDict(value, self._msg_type(),
                                               ignore_unknown_fields=self._ignore_unknown_fields)
        except self._json_format.ParseError as exc:
            raise SerializationError(str(exc)) from exc

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        message = self._to_message(value)
        if self._registry is not None:
            return registry_errors("ProtobufSerializer", self._registry_config, self._registry, message, ctx)  # type: ignore[arg-type]
        try:
            return message.SerializeToString(deterministic=self._deterministic)
        except Exception as exc:  # e.g. missing required fields (proto2)
            raise SerializationError(str(exc)) from exc


class ProtobufDeserializer(Deserializer):
    """Parse Protobuf bytes into a dict (or the ``msg_type`` message with ``to_dict=False``)."""

    def __init__(self, msg_type: Type[Any], use_integers_for_enums: bool = False,
                 preserving_proto_field_name: bool = False, to_dict: bool = True,
                 schema_registry_client_config: Optional[SchemaRegistryClientConfig] = None,
                 schema_registry_serialization_config: Optional[SchemaRegistrySerializationConfig] = None) -> None:
        super().__init__()
        check_registry_settings("ProtobufDeserializer", schema_registry_client_config,
                                schema_registry_serialization_config)
        self._json_format, self._decode_error = _protobuf()
        self._msg_type = msg_type
        self._use_integers_for_enums = use_integers_for_enums
        self._preserving_proto_field_name = preserving_proto_field_name
        self._to_dict = to_dict
        config = schema_registry_serialization_config or SchemaRegistrySerializationConfig()
        if schema_registry_serialization_config is not None:
            unused = [name for name in ("normalize_schemas", "use_latest_version", "skip_known_types")
                      if getattr(config, name)]
            if unused:
                raise ValueError(f"ProtobufDeserializer: {', '.join(unused)} do(es) not apply to a deserializer; "
                                 f"only use_deprecated_format does")
        self._registry: Any = None
        self._registry_config = schema_registry_client_config
        if schema_registry_client_config is not None:
            # framing only: the message type is known, no registry call is made (as in Quix)
            self._registry = registry_module("protobuf").ProtobufDeserializer(
                msg_type, conf={"use.deprecated.format": config.use_deprecated_format})

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        if self._registry is not None:
            message = registry_errors("ProtobufDeserializer", self._registry_config, self._registry,  # type: ignore[arg-type]
                                      value, ctx)
        else:
            try:
                message = self._msg_type.FromString(value)
            except self._decode_error as exc:
                raise SerializationError(str(exc)) from exc
        if not self._to_dict:
            return message
        return self._json_format.MessageToDict(message, always_print_fields_with_no_presence=True,
                                               use_integers_for_enums=self._use_integers_for_enums,
                                               preserving_proto_field_name=self._preserving_proto_field_name)

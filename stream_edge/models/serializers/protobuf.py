"""Protobuf (de)serializers, optionally through a Confluent Schema Registry.

With a registry, a message is framed as Confluent does: magic byte 0, the schema id, the message
indexes (the path of the message type inside its .proto file, as zig-zag varints; ``[0]`` is the
single byte 0; ``use_deprecated_format`` writes plain varints), then the message. The schema
registered is the message's file, as the base64 of its ``FileDescriptorProto``, with its imports
registered first as references (``google/protobuf/*`` skipped with ``skip_known_types``).
protobuf is optional: its absence names the extra to install (``edge-protobuf``).
"""

from __future__ import annotations

import base64
from typing import Any, List, Optional, Tuple, Type

from .base import Deserializer, SerializationContext, Serializer
from .exceptions import SerializationError
from .schema_registry import (RegistryFraming, SchemaReference, SchemaRegistryClientConfig,
                              SchemaRegistrySerializationConfig, check_registry_settings, header, split_header)

__all__ = ("ProtobufSerializer", "ProtobufDeserializer", "encode_message_indexes", "decode_message_indexes")


def _protobuf() -> Tuple[Any, Any]:
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError
    except ImportError as exc:
        raise ImportError("Protobuf serializers need protobuf: pip install 'streaming-lakehouse[edge-protobuf]'") from exc
    return json_format, DecodeError


# -- message indexes --------------------------------------------------------------------------------
def _varint(value: int, zigzag: bool) -> bytes:
    if zigzag:
        value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_message_indexes(indexes: List[int], zigzag: bool = True) -> bytes:
    """Confluent's message-index prefix.

    >>> encode_message_indexes([0]), encode_message_indexes([1, 0]), encode_message_indexes([1, 0], zigzag=False)
    (b'\\x00', b'\\x04\\x02\\x00', b'\\x02\\x01\\x00')
    """
    if indexes == [0]:
        return b"\x00"
    return _varint(len(indexes), zigzag) + b"".join(_varint(i, zigzag) for i in indexes)


def decode_message_indexes(data: bytes, zigzag: bool = True) -> Tuple[List[int], int]:
    """``(indexes, bytes consumed)`` of a message-index prefix.

    >>> decode_message_indexes(b'\\x04\\x02\\x00rest')
    ([1, 0], 3)
    """
    pos = 0

    def read() -> int:
        nonlocal pos
        shift = result = 0
        while True:
            if pos >= len(data):
                raise SerializationError("truncated Protobuf message indexes")
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                break
            shift += 7
        return (result >> 1) ^ -(result & 1) if zigzag else result

    count = read()
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data):
        raise SerializationError(f"invalid Protobuf message index count {count}")
    return [read() for _ in range(count)], pos


def _message_path(descriptor: Any) -> List[int]:
    """Indexes from the file's top-level message list down to ``descriptor``."""
    path: List[int] = []
    while descriptor is not None:
        container = descriptor.containing_type
        siblings = container.nested_types if container is not None else list(descriptor.file.message_types_by_name.values())
        path.append([d.full_name for d in siblings].index(descriptor.full_name))
        descriptor = container
    return path[::-1]


def _schema_text(file_descriptor: Any) -> str:
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto()
    file_descriptor.CopyToProto(proto)
    return base64.standard_b64encode(proto.SerializeToString()).decode()


def _is_known(file_descriptor: Any) -> bool:
    return file_descriptor.name.startswith("google/protobuf/")


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
        self._registry = (RegistryFraming("ProtobufSerializer", schema_registry_client_config,
                                          schema_registry_serialization_config, "PROTOBUF")
                          if schema_registry_client_config is not None else None)
        self._index_prefix = b""
        if self._registry is not None:
            self._index_prefix = encode_message_indexes(_message_path(msg_type.DESCRIPTOR),
                                                        not self._registry.config.use_deprecated_format)
        self._references: Optional[Tuple[SchemaReference, ...]] = None

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

    def _register_references(self, ctx: SerializationContext, file_descriptor: Any) -> Tuple[SchemaReference, ...]:
        """Register the imports of ``file_descriptor`` (depth first) and return them as references."""
        registry = self._registry
        assert registry is not None
        refs = []
        for dependency in file_descriptor.dependencies:
            if registry.config.skip_known_types and _is_known(dependency):
                continue
            nested = self._register_references(ctx, dependency)
            ref_subject = registry.config.reference_subject_name_strategy(ctx, SchemaReference(dependency.name, "", 0))
            schema = _schema_text(dependency)
            client = registry.client
            if registry.config.auto_register_schemas:
                client.register_schema(ref_subject, schema, "PROTOBUF", nested, registry.config.normalize_schemas)
            version = client.lookup_schema(ref_subject, schema, "PROTOBUF", nested,
                                           registry.config.normalize_schemas).version
            refs.append(SchemaReference(dependency.name, ref_subject, int(version or 1)))
        return tuple(refs)

    def __call__(self, value: Any, ctx: SerializationContext) -> bytes:
        message = self._to_message(value)
        try:
            data = message.SerializeToString(deterministic=self._deterministic)
        except Exception as exc:  # e.g. missing required fields (proto2)
            raise SerializationError(str(exc)) from exc
        registry = self._registry
        if registry is None:
            return data
        descriptor = self._msg_type.DESCRIPTOR
        if self._references is None:
            self._references = self._register_references(ctx, descriptor.file)
        subject = registry.subject(ctx, descriptor.full_name)
        schema_id, _ = registry.schema_id(subject, _schema_text(descriptor.file), self._references)
        return header(schema_id) + self._index_prefix + data


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
        self._registry = schema_registry_client_config is not None
        config = schema_registry_serialization_config or SchemaRegistrySerializationConfig()
        if schema_registry_serialization_config is not None:
            unused = [name for name in ("normalize_schemas", "use_latest_version", "skip_known_types")
                      if getattr(config, name)]
            if unused:
                raise ValueError(f"ProtobufDeserializer: {', '.join(unused)} do(es) not apply to a deserializer; "
                                 f"only use_deprecated_format does")
        self._zigzag = not config.use_deprecated_format

    def __call__(self, value: bytes, ctx: SerializationContext) -> Any:
        if self._registry:
            _, payload = split_header(value, ctx.field)
            _, used = decode_message_indexes(payload, self._zigzag)
            value = payload[used:]
        try:
            message = self._msg_type.FromString(value)
        except self._decode_error as exc:
            raise SerializationError(str(exc)) from exc
        if not self._to_dict:
            return message
        return self._json_format.MessageToDict(message, always_print_fields_with_no_presence=True,
                                               use_integers_for_enums=self._use_integers_for_enums,
                                               preserving_proto_field_name=self._preserving_proto_field_name)

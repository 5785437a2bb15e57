"""Confluent Schema Registry support: the two configuration objects of Quix Streams 3.28, and the
client and registry serializers of ``confluent_kafka.schema_registry`` (extra
``edge-schema-registry``), which the Avro, JSON and Protobuf serializers hand the work to when a
registry is configured, as Quix does.

Wire format of every registry-framed message: magic byte ``0``, the schema id as a 4-byte big-endian
integer, then the payload (Avro binary, JSON text, or Protobuf message indexes + message bytes).
:func:`split_header` explains a registry deserializer's magic-byte error, so a message that is not
registry-framed gets an error naming the key or value.

>>> header(42)
b'\\x00\\x00\\x00\\x00*'
>>> split_header(b'\\x00\\x00\\x00\\x00*rest', "value")
(42, b'rest')
"""

from __future__ import annotations

import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from stream_edge.errors import OutageError
from stream_edge.kafka.configuration import SecretStr  # the same masked secret as ConnectionConfig
from stream_edge.logging import mask_secrets

from .base import SerializationContext
from .exceptions import SerializationError

__all__ = ("SchemaRegistryClientConfig", "SchemaRegistrySerializationConfig", "SchemaReference",
           "topic_subject_name_strategy", "topic_record_subject_name_strategy", "record_subject_name_strategy",
           "reference_subject_name_strategy", "header", "split_header", "registry_client", "serializer_conf",
           "check_registry_settings", "registry_errors", "registry_module", "SchemaRegistryUnavailable")

_EXTRA = "pip install 'streaming-lakehouse[edge-schema-registry]'"

MAGIC_BYTE = 0


_HEADER = struct.Struct(">bI")


class SchemaRegistryUnavailable(OutageError, SerializationError):
    """The Schema Registry did not answer, failed (5xx) or refused our credentials (401/403): an
    outage, no record's fault (``stream_edge.is_outage`` is True). A ``SerializationError`` too,
    as Quix Streams raises one."""


@dataclass
class SchemaRegistryClientConfig:
    """Where the Schema Registry is and how to authenticate (Quix Streams 3.28 parameters).

    ``basic_auth_user_info`` is ``"user:password"``; by default the user info of ``url`` is used.
    """

    url: str
    ssl_ca_location: Optional[str] = None
    ssl_key_location: Optional[str] = None
    ssl_certificate_location: Optional[str] = None
    basic_auth_user_info: Optional[Any] = None

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url:
            raise ValueError("SchemaRegistryClientConfig: 'url' must be a non-empty string")
        if isinstance(self.basic_auth_user_info, str):
            self.basic_auth_user_info = SecretStr(self.basic_auth_user_info)
        if self.ssl_key_location and not self.ssl_certificate_location:
            raise ValueError("SchemaRegistryClientConfig: 'ssl_key_location' needs 'ssl_certificate_location'")

    def as_dict(self, plaintext_secrets: bool = False) -> Dict[str, Any]:
        """The settings by Confluent's names (``url``, ``ssl.ca.location``...), None left out."""
        auth = self.basic_auth_user_info
        if isinstance(auth, SecretStr) and plaintext_secrets:
            auth = auth.get_secret_value()
        items = {"url": self.url, "ssl.ca.location": self.ssl_ca_location,
                 "ssl.key.location": self.ssl_key_location,
                 "ssl.certificate.location": self.ssl_certificate_location, "basic.auth.user.info": auth}
        return {k: v for k, v in items.items() if v is not None}


@dataclass(frozen=True)
class SchemaReference:
    """A reference from one schema to another registered one (``name`` is e.g. the imported file)."""

    name: str
    subject: str
    version: int


def topic_subject_name_strategy(ctx: SerializationContext, record_name: Optional[str]) -> str:
    """``<topic>-key`` or ``<topic>-value`` (the default)."""
    return f"{ctx.topic}-{ctx.field}"


def topic_record_subject_name_strategy(ctx: SerializationContext, record_name: Optional[str]) -> str:
    """``<topic>-<fully qualified record name>``."""
    return f"{ctx.topic}-{record_name}" if record_name is not None else None  # type: ignore[return-value]


def record_subject_name_strategy(ctx: SerializationContext, record_name: Optional[str]) -> str:
    """The fully qualified record name."""
    return record_name if record_name is not None else None  # type: ignore[return-value]


def reference_subject_name_strategy(ctx: SerializationContext, schema_ref: Any) -> str:
    """A reference's subject is its name (e.g. ``google/protobuf/timestamp.proto``)."""
    return str(schema_ref.name)


@dataclass
class SchemaRegistrySerializationConfig:
    """How a serializer uses the registry (Quix Streams 3.28 parameters and defaults)."""

    auto_register_schemas: bool = True
    normalize_schemas: bool = False
    use_latest_version: bool = False
    subject_name_strategy: Callable[[SerializationContext, Optional[str]], str] = topic_subject_name_strategy
    skip_known_types: bool = False
    reference_subject_name_strategy: Callable[[SerializationContext, Any], str] = reference_subject_name_strategy
    use_deprecated_format: bool = False

    def __post_init__(self) -> None:
        for name in ("auto_register_schemas", "normalize_schemas", "use_latest_version", "skip_known_types",
                     "use_deprecated_format"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"SchemaRegistrySerializationConfig: '{name}' must be a bool, "
                                 f"got {getattr(self, name)!r}")
        for name in ("subject_name_strategy", "reference_subject_name_strategy"):
            if not callable(getattr(self, name)):
                raise ValueError(f"SchemaRegistrySerializationConfig: '{name}' must be callable")


def check_registry_settings(kind: str, client_config: Any, serialization_config: Any = None) -> None:
    """Refuse a serialization config without a client config, and objects of the wrong type."""
    if serialization_config is not None and client_config is None:
        raise ValueError("If `schema_registry_serialization_config` is provided `schema_registry_client_config` "
                         "must also be set.")
    if client_config is not None and not isinstance(client_config, SchemaRegistryClientConfig):
        raise TypeError(f"{kind}: schema_registry_client_config must be a SchemaRegistryClientConfig, "
                        f"got {type(client_config).__name__}")
    if serialization_config is not None and not isinstance(serialization_config, SchemaRegistrySerializationConfig):
        raise TypeError(f"{kind}: schema_registry_serialization_config must be a SchemaRegistrySerializationConfig, "
                        f"got {type(serialization_config).__name__}")


# -- wire format ------------------------------------------------------------------------------------
def header(schema_id: int) -> bytes:
    """The 5-byte Confluent header of a message written with schema ``schema_id``."""
    return _HEADER.pack(MAGIC_BYTE, schema_id)


def split_header(data: bytes, field_name: str) -> Tuple[int, bytes]:
    """``(schema id, payload)`` of a registry-framed message; a clear error if it is not one."""
    if data is None or len(data) < 5 or data[0] != MAGIC_BYTE:
        magic = data[0] if data else None
        raise SerializationError(
            f"Unexpected magic byte {magic}. This message was not produced with a Confluent Schema Registry "
            f"serializer (the {field_name} does not start with the 5-byte registry header)")
    return _HEADER.unpack_from(data)[1], bytes(data[5:])


# -- confluent_kafka.schema_registry ----------------------------------------------------------------
def registry_module(name: str = "") -> Any:
    """``confluent_kafka.schema_registry`` or one of its format modules (``avro``, ``json_schema``,
    ``protobuf``); without confluent-kafka's registry extra, an ImportError naming ours."""
    import importlib

    module = "confluent_kafka.schema_registry" + (f".{name}" if name else "")
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # its extra pulls httpx and authlib in (and fastavro, protobuf per format)
        raise ImportError(f"Schema Registry support needs {module} ({exc}): {_EXTRA}") from exc


_CLIENTS: Dict[Tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def registry_client(config: SchemaRegistryClientConfig) -> Any:
    """One shared ``confluent_kafka.schema_registry.SchemaRegistryClient`` (and its caches) per
    distinct configuration."""
    settings = config.as_dict(plaintext_secrets=True)
    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = registry_module().SchemaRegistryClient(settings)
        return client


def serializer_conf(kind: str, config: Optional[SchemaRegistrySerializationConfig], schema_type: str) -> Dict[str, Any]:
    """The ``conf`` of a confluent registry serializer; settings it cannot honour are refused here
    (``ValueError``), never ignored."""
    config = config or SchemaRegistrySerializationConfig()
    if config.auto_register_schemas and config.use_latest_version:
        raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
    if config.use_deprecated_format and schema_type != "PROTOBUF":
        raise ValueError(f"{kind}: 'use_deprecated_format' applies to Protobuf only")
    if config.skip_known_types and schema_type != "PROTOBUF":
        raise ValueError(f"{kind}: 'skip_known_types' applies to Protobuf only")
    conf: Dict[str, Any] = {"auto.register.schemas": config.auto_register_schemas,
                            "normalize.schemas": config.normalize_schemas,
                            "use.latest.version": config.use_latest_version,
                            "subject.name.strategy": config.subject_name_strategy}
    if schema_type == "PROTOBUF":
        conf.update({"skip.known.types": config.skip_known_types,
                     "use.deprecated.format": config.use_deprecated_format,
                     "reference.subject.name.strategy": config.reference_subject_name_strategy})
    return conf


def registry_errors(kind: str, config: SchemaRegistryClientConfig, call: Callable[[Any, SerializationContext], Any],
                    value: Any, ctx: SerializationContext) -> Any:
    """``call(value, ctx)``, with the registry's and its transport's errors turned into
    :class:`SerializationError` (which the runtime hands to the error callbacks with the record)."""
    try:
        return call(value, ctx)
    except SerializationError:
        raise
    except Exception as exc:
        module = type(exc).__module__.split(".")[0]
        status = getattr(exc, "http_status_code", None)
        if module in ("httpx", "httpx2") or isinstance(exc, OSError) or (
                isinstance(status, int) and (status >= 500 or status in (401, 403, 407, 408, 429))):
            # not the record's fault: the runtime pauses and retries (stream_edge/errors.py)
            raise SchemaRegistryUnavailable(f"the Schema Registry at {mask_secrets(config.url)}",
                                            mask_secrets(f"{kind}: {type(exc).__name__}: {exc}")) from exc
        if module in ("confluent_kafka", "fastavro", "google", "jsonschema") or isinstance(
                exc, (ValueError, TypeError, KeyError, EOFError)):
            if "magic byte" in str(exc).lower() and isinstance(value, (bytes, bytearray)):
                split_header(value, ctx.field)  # not registry-framed: raises the error naming the field
            raise SerializationError(str(exc)) from exc  # the registry serializer's message, as in Quix
        raise

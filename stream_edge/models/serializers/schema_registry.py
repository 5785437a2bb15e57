"""Confluent Schema Registry support: the two configuration objects of Quix Streams 3.28, a small
HTTP client (standard library only) and the Confluent wire format.

Wire format of every registry-framed message: magic byte ``0``, the schema id as a 4-byte big-endian
integer, then the payload (Avro binary, JSON text, or Protobuf message indexes + message bytes).

>>> header(42)
b'\\x00\\x00\\x00\\x00*'
>>> split_header(b'\\x00\\x00\\x00\\x00*rest', "value")
(42, b'rest')
"""

from __future__ import annotations

import base64
import json
import ssl
import struct
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from stream_edge.kafka.configuration import SecretStr  # the same masked secret as ConnectionConfig

from .base import SerializationContext
from .exceptions import SerializationError

__all__ = ("SchemaRegistryClientConfig", "SchemaRegistrySerializationConfig", "SchemaReference",
           "RegisteredSchema", "SchemaRegistryClient", "SchemaRegistryError", "topic_subject_name_strategy",
           "topic_record_subject_name_strategy", "record_subject_name_strategy",
           "reference_subject_name_strategy", "header", "split_header", "registry_client", "check_registry_settings")

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")


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


# -- HTTP client --------------------------------------------------------------------------------------
class SchemaRegistryError(SerializationError):
    """The registry answered with an error (``http_status``, ``error_code`` as the registry says)."""

    def __init__(self, http_status: int, error_code: int, message: str) -> None:
        super().__init__(f"{message} (HTTP status code {http_status}, SR code {error_code})")
        self.http_status, self.error_code, self.error_message = http_status, error_code, message


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it."""

    schema_id: int
    schema_str: str
    schema_type: str = "AVRO"
    references: Tuple[SchemaReference, ...] = ()
    subject: Optional[str] = None
    version: Optional[int] = None


@dataclass
class SchemaRegistryClient:
    """A small client for the Confluent Schema Registry REST API, with the caches a serializer needs."""

    config: SchemaRegistryClientConfig
    timeout: float = 10.0
    _ids: Dict[Tuple[str, str, str, Tuple[SchemaReference, ...], bool], int] = field(default_factory=dict)
    _schemas: Dict[int, RegisteredSchema] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        parsed = urllib.parse.urlsplit(self.config.url.split(",")[0].strip())
        netloc = parsed.netloc.rpartition("@")[2]  # user info goes to the Authorization header
        self._base = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path.rstrip("/"), "", ""))
        auth = self.config.basic_auth_user_info
        user_info = auth.get_secret_value() if isinstance(auth, SecretStr) else auth
        if user_info is None and parsed.username is not None:
            user_info = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
        self._auth = ("Basic " + base64.b64encode(user_info.encode()).decode()) if user_info else None
        self._ssl: Optional[ssl.SSLContext] = None
        if parsed.scheme == "https":
            self._ssl = ssl.create_default_context(cafile=self.config.ssl_ca_location)
            if self.config.ssl_certificate_location:
                self._ssl.load_cert_chain(self.config.ssl_certificate_location, self.config.ssl_key_location)

    def _request(self, method: str, path: str, body: Optional[Mapping[str, Any]] = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self._base + path, data=data, method=method, headers={
            "Accept": "application/vnd.schemaregistry.v1+json, application/json",
            "Content-Type": "application/vnd.schemaregistry.v1+json"})
        if self._auth:
            request.add_header("Authorization", self._auth)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._ssl) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            payload = exc.read()
            try:
                detail = json.loads(payload)
                code, message = int(detail.get("error_code", exc.code)), str(detail.get("message", payload))
            except (ValueError, AttributeError):
                code, message = exc.code, payload.decode(errors="replace") or exc.reason
            raise SchemaRegistryError(exc.code, code, message) from None
        except (urllib.error.URLError, OSError) as exc:
            raise SchemaRegistryError(-1, -1, f"Schema Registry at {self._base} is unreachable: {exc}") from None

    @staticmethod
    def _body(schema_str: str, schema_type: str, references: Tuple[SchemaReference, ...]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"schema": schema_str}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = [{"name": r.name, "subject": r.subject, "version": r.version} for r in references]
        return body

    def register_schema(self, subject: str, schema_str: str, schema_type: str = "AVRO",
                        references: Tuple[SchemaReference, ...] = (), normalize: bool = False) -> int:
        """Register (or find) the schema under ``subject``; returns its id (cached)."""
        key = ("register", subject, schema_str, references, normalize)
        with self._lock:
            if key in self._ids:
                return self._ids[key]
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}/versions" + ("?normalize=true" if normalize else "")
        schema_id = int(self._request("POST", path, self._body(schema_str, schema_type, references))["id"])
        with self._lock:
            self._ids[key] = schema_id
        return schema_id

    def lookup_schema(self, subject: str, schema_str: str, schema_type: str = "AVRO",
                      references: Tuple[SchemaReference, ...] = (), normalize: bool = False) -> RegisteredSchema:
        """The registered version of this schema under ``subject`` (an error if it is not registered)."""
        key = ("lookup", subject, schema_str, references, normalize)
        with self._lock:
            if key in self._ids:
                return self._schemas[self._ids[key]]
        path = f"/subjects/{urllib.parse.quote(subject, safe='')}" + ("?normalize=true" if normalize else "")
        found = self._request("POST", path, self._body(schema_str, schema_type, references))
        registered = self._registered(found, subject)
        with self._lock:
            self._ids[key] = registered.schema_id
            self._schemas.setdefault(registered.schema_id, registered)
        return registered

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        """The latest version under ``subject`` (not cached: it may change)."""
        found = self._request("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/latest")
        return self._registered(found, subject)

    def get_version(self, subject: str, version: int) -> RegisteredSchema:
        """One version of ``subject``."""
        found = self._request("GET", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}")
        return self._registered(found, subject)

    def get_schema(self, schema_id: int) -> RegisteredSchema:
        """The schema with this id (cached: ids never change)."""
        with self._lock:
            if schema_id in self._schemas:
                return self._schemas[schema_id]
        found = self._request("GET", f"/schemas/ids/{schema_id}")
        found["id"] = schema_id
        registered = self._registered(found, None)
        with self._lock:
            self._schemas[schema_id] = registered
        return registered

    @staticmethod
    def _registered(found: Mapping[str, Any], subject: Optional[str]) -> RegisteredSchema:
        refs = tuple(SchemaReference(r["name"], r["subject"], int(r["version"])) for r in found.get("references") or ())
        return RegisteredSchema(int(found["id"]), found["schema"], found.get("schemaType") or "AVRO", refs,
                                found.get("subject", subject), found.get("version"))


_CLIENTS: Dict[Tuple[Any, ...], SchemaRegistryClient] = {}
_CLIENTS_LOCK = threading.Lock()


def registry_client(config: SchemaRegistryClientConfig) -> SchemaRegistryClient:
    """One shared client (and cache) per distinct configuration."""
    key = tuple(sorted((k, str(v.get_secret_value() if isinstance(v, SecretStr) else v))
                       for k, v in config.as_dict().items()))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = SchemaRegistryClient(config)
        return client


def references_of(refs: List[Any]) -> Tuple[SchemaReference, ...]:
    """Normalise references given as SchemaReference objects or dicts."""
    return tuple(r if isinstance(r, SchemaReference) else SchemaReference(r["name"], r["subject"], int(r["version"]))
                 for r in refs)


class RegistryFraming:
    """What a registry-backed serializer shares: the client, the subject, and the schema id to write.

    ``schema_type`` is ``"AVRO"``, ``"JSON"`` or ``"PROTOBUF"``. Settings a serializer cannot honour are
    refused here (``ValueError``), never ignored.
    """

    def __init__(self, kind: str, client_config: SchemaRegistryClientConfig,
                 serialization_config: Optional[SchemaRegistrySerializationConfig], schema_type: str) -> None:
        config = serialization_config or SchemaRegistrySerializationConfig()
        if config.auto_register_schemas and config.use_latest_version:
            raise ValueError("cannot enable both use.latest.version and auto.register.schemas")
        if config.use_deprecated_format and schema_type != "PROTOBUF":
            raise ValueError(f"{kind}: 'use_deprecated_format' applies to Protobuf only")
        if config.skip_known_types and schema_type != "PROTOBUF":
            raise ValueError(f"{kind}: 'skip_known_types' applies to Protobuf only")
        self.kind, self.config, self.schema_type = kind, config, schema_type
        self.client = registry_client(client_config)
        self._ids: Dict[str, Tuple[int, Optional[RegisteredSchema]]] = {}

    def subject(self, ctx: SerializationContext, record_name: Optional[str]) -> str:
        """The subject by the configured strategy; an error if the strategy gives none."""
        subject = self.config.subject_name_strategy(ctx, record_name)
        if not subject:
            raise SerializationError(f"{self.kind}: the subject name strategy gave no subject for topic "
                                     f"'{ctx.topic}' ({ctx.field}, record name {record_name!r})")
        return subject

    def schema_id(self, subject: str, schema_str: str,
                  references: Tuple[SchemaReference, ...] = ()) -> Tuple[int, Optional[RegisteredSchema]]:
        """The id to write, and the latest registered schema when ``use_latest_version`` is on."""
        if self.config.use_latest_version:  # never cached: the latest version may change
            latest = self.client.get_latest_version(subject)
            return latest.schema_id, latest
        cached = self._ids.get(subject)
        if cached is not None:
            return cached
        if self.config.auto_register_schemas:
            found: Tuple[int, Optional[RegisteredSchema]] = (self.client.register_schema(
                subject, schema_str, self.schema_type, references, self.config.normalize_schemas), None)
        else:
            found = (self.client.lookup_schema(subject, schema_str, self.schema_type, references,
                                               self.config.normalize_schemas).schema_id, None)
        self._ids[subject] = found
        return found

"""ConnectionConfig: the librdkafka connection settings (SASL/SSL included), secrets masked.

Behaves like Quix Streams 3.28's settings object, without pydantic (the edge stays light):

- field names are case-insensitive (``BOOTSTRAP_SERVERS=...`` works); the environment is not read;
- ``sasl_mechanism`` is upper-cased, ``security_protocol``, ``sasl_oauthbearer_method`` and
  ``ssl_endpoint_identification_algorithm`` lower-cased, and each is checked against its allowed
  values; unknown fields are refused (the error names them);
- secret fields hold a :class:`SecretStr` (``repr`` shows ``**********``);
  ``as_librdkafka_dict()`` gives the plain values to the Kafka clients;
- ``oauth_cb`` may be a callable or an import string (``"mypkg.auth.token"``).

Example::

    >>> c = ConnectionConfig(bootstrap_servers="b:9093", security_protocol="SASL_SSL",
    ...                      sasl_mechanism="plain", sasl_username="u", sasl_password="p")
    >>> c.sasl_password
    SecretStr('**********')
    >>> c.as_librdkafka_dict()["sasl.mechanism"], c.as_librdkafka_dict()["sasl.password"]
    ('PLAIN', 'p')
    >>> str(c)
    "{'bootstrap.servers': 'b:9093', 'security.protocol': 'sasl_ssl', 'sasl.mechanism': 'PLAIN', 'sasl.username': 'u', 'sasl.password': SecretStr('**********')}"
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from stream_edge.kafka.validation import pydantic_error

__all__ = ("ConnectionConfig", "SecretStr", "connection_dict")

# Every field, in Quix's order (repr and dict order follow it).
_FIELDS: Tuple[str, ...] = (
    "bootstrap_servers", "security_protocol", "client_id", "sasl_mechanism", "sasl_username", "sasl_password",
    "sasl_kerberos_kinit_cmd", "sasl_kerberos_keytab", "sasl_kerberos_min_time_before_relogin",
    "sasl_kerberos_service_name", "sasl_kerberos_principal", "oauth_cb", "sasl_oauthbearer_config",
    "enable_sasl_oauthbearer_unsecure_jwt", "sasl_oauthbearer_method", "sasl_oauthbearer_client_id",
    "sasl_oauthbearer_client_secret", "sasl_oauthbearer_scope", "sasl_oauthbearer_extensions",
    "sasl_oauthbearer_token_endpoint_url", "ssl_cipher_suites", "ssl_curves_list", "ssl_sigalgs_list",
    "ssl_key_location", "ssl_key_password", "ssl_key_pem", "ssl_certificate_location", "ssl_certificate_pem",
    "ssl_ca_location", "ssl_ca_pem", "ssl_ca_certificate_stores", "ssl_crl_location", "ssl_keystore_location",
    "ssl_keystore_password", "ssl_providers", "ssl_engine_location", "ssl_engine_id",
    "enable_ssl_certificate_verification", "ssl_endpoint_identification_algorithm",
)
_SECRETS = {"sasl_password", "sasl_oauthbearer_client_secret", "ssl_key_password", "ssl_ca_pem",
            "ssl_keystore_password"}
_INTEGERS = {"sasl_kerberos_min_time_before_relogin"}
_BOOLEANS = {"enable_sasl_oauthbearer_unsecure_jwt", "enable_ssl_certificate_verification"}
# field -> (allowed values, case applied before the check)
_CHOICES: Dict[str, Tuple[Tuple[str, ...], Callable[[str], str]]] = {
    "security_protocol": (("plaintext", "ssl", "sasl_plaintext", "sasl_ssl"), str.lower),
    "sasl_mechanism": (("GSSAPI", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"), str.upper),
    "sasl_oauthbearer_method": (("default", "oidc"), str.lower),
    "ssl_endpoint_identification_algorithm": (("none", "https"), str.lower),
}
_ALIASES = {"sasl_mechanisms": "sasl_mechanism"}


class SecretStr:
    """A secret string: ``repr``/``str`` never show it; ``get_secret_value()`` does."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')" if self._value else "SecretStr('')"

    def __str__(self) -> str:
        return "**********" if self._value else ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def _import_string(path: str) -> Any:
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ValueError(f"oauth_cb: '{path}' is not an import path like 'package.module.function'")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"oauth_cb: cannot import '{path}': {exc}") from None


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}: expected a boolean, got {value!r}")


def _convert(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in _SECRETS:
        return value if isinstance(value, SecretStr) else SecretStr(str(value))
    if name in _CHOICES:
        allowed, case = _CHOICES[name]
        normalised = case(str(value))
        if normalised not in allowed:
            raise ValueError(f"{name}: {value!r} is not one of {list(allowed)}")
        return normalised
    if name in _INTEGERS:
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected an integer, got {value!r}") from None
    if name in _BOOLEANS:
        return _bool(name, value)
    if name == "oauth_cb":
        if isinstance(value, str):
            value = _import_string(value)
        if not callable(value):
            raise ValueError(f"oauth_cb: expected a callable or an import string, got {type(value).__name__}")
        return value
    return str(value)


class ConnectionConfig:
    """Connection settings shared by the producer, consumer and admin clients (see module docs)."""

    def __init__(self, **settings: Any) -> None:
        given: Dict[str, Any] = {}
        unknown = []
        for key, value in settings.items():
            name = _ALIASES.get(key.lower(), key.lower())
            if name not in _FIELDS:
                unknown.append((key, value))
            given[name] = value
        if unknown:  # pydantic's error, as Quix's pydantic model raises it, when pydantic is installed
            raise (pydantic_error("ConnectionConfig", "extra_forbidden", unknown)
                   or ValueError(f"ConnectionConfig: unknown setting {unknown[0][0]!r} (not a connection setting)"))
        for name in _FIELDS:
            object.__setattr__(self, name, _convert(name, given.get(name)))
        if self.bootstrap_servers is None:
            raise ValueError("ConnectionConfig: bootstrap_servers is required")

    bootstrap_servers: str
    security_protocol: Optional[str]
    sasl_mechanism: Optional[str]
    sasl_username: Optional[str]
    sasl_password: Optional[SecretStr]
    oauth_cb: Optional[Callable[[str], Tuple[str, float]]]

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in _FIELDS:
            raise AttributeError(f"ConnectionConfig has no setting {name!r}")
        object.__setattr__(self, name, _convert(name, value))

    @classmethod
    def from_librdkafka_dict(cls, config: Mapping[str, Any], ignore_extras: bool = False) -> "ConnectionConfig":
        """Build from ``{"bootstrap.servers": ..., "sasl.mechanism": ...}``; keys that are not
        connection settings raise pydantic's ``ValidationError`` (a ``ValueError``; without pydantic a
        plain one) unless ``ignore_extras``."""
        known, extras = {}, []
        for key, value in config.items():
            name = key.lower().replace(".", "_")
            name = _ALIASES.get(name, name)
            if name in _FIELDS:
                known[name] = value
            else:
                extras.append((name, value))
        if extras and not ignore_extras:  # pydantic's error when it is installed, as in Quix
            raise (pydantic_error("ConnectionConfig", "extra_forbidden", extras)
                   or ValueError(f"ConnectionConfig.from_librdkafka_dict: not connection settings: "
                                 f"{sorted(name for name, _ in extras)}"))
        return cls(**known)

    def as_librdkafka_dict(self, plaintext_secrets: bool = True) -> Dict[str, Any]:
        """The settings that are set, as a librdkafka dict (secrets in plain text unless told)."""
        out: Dict[str, Any] = {}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, SecretStr) and plaintext_secrets:
                value = value.get_secret_value()
            out[name if name == "oauth_cb" else name.replace("_", ".")] = value
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConnectionConfig) and all(
            getattr(self, n) == getattr(other, n) for n in _FIELDS)

    def __repr__(self) -> str:  # secrets are SecretStr: never printed
        return "ConnectionConfig(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in _FIELDS) + ")"

    def __str__(self) -> str:
        return str(self.as_librdkafka_dict(plaintext_secrets=False))


def connection_dict(broker_address: "str | ConnectionConfig") -> Dict[str, Any]:
    """librdkafka settings for a broker address string or a ConnectionConfig."""
    if isinstance(broker_address, ConnectionConfig):
        return broker_address.as_librdkafka_dict()
    return {"bootstrap.servers": broker_address}

"""ConnectionConfig: the librdkafka connection settings (SASL/SSL included), secrets masked."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

__all__ = ("ConnectionConfig",)

_SECRETS = {"sasl_password", "ssl_key_password", "ssl_keystore_password", "sasl_oauthbearer_client_secret"}


@dataclasses.dataclass
class ConnectionConfig:
    """Connection settings shared by the producer, consumer and admin clients.

    Example::

        ConnectionConfig(bootstrap_servers="broker:9093", security_protocol="SASL_SSL",
                         sasl_mechanism="SCRAM-SHA-256", sasl_username="u", sasl_password="p",
                         ssl_ca_location="/etc/ssl/ca.pem")
    """

    bootstrap_servers: str
    security_protocol: Optional[str] = None
    sasl_mechanism: Optional[str] = None
    sasl_username: Optional[str] = None
    sasl_password: Optional[str] = None
    sasl_kerberos_service_name: Optional[str] = None
    sasl_kerberos_keytab: Optional[str] = None
    sasl_kerberos_principal: Optional[str] = None
    sasl_oauthbearer_config: Optional[str] = None
    sasl_oauthbearer_method: Optional[str] = None
    sasl_oauthbearer_client_id: Optional[str] = None
    sasl_oauthbearer_client_secret: Optional[str] = None
    sasl_oauthbearer_token_endpoint_url: Optional[str] = None
    sasl_oauthbearer_scope: Optional[str] = None
    ssl_ca_location: Optional[str] = None
    ssl_ca_pem: Optional[str] = None
    ssl_certificate_location: Optional[str] = None
    ssl_certificate_pem: Optional[str] = None
    ssl_key_location: Optional[str] = None
    ssl_key_pem: Optional[str] = None
    ssl_key_password: Optional[str] = None
    ssl_keystore_location: Optional[str] = None
    ssl_keystore_password: Optional[str] = None
    ssl_endpoint_identification_algorithm: Optional[str] = None
    oauth_cb: Any = None

    @classmethod
    def from_librdkafka_dict(cls, config: dict, ignore_extras: bool = False) -> "ConnectionConfig":
        """Build from ``{"bootstrap.servers": ..., "sasl.mechanism": ...}``."""
        fields = {f.name for f in dataclasses.fields(cls)}
        kwargs, extras = {}, []
        for key, value in config.items():
            name = key.lower().replace(".", "_")
            if name == "sasl_mechanisms":
                name = "sasl_mechanism"
            if name in fields:
                kwargs[name] = value
            else:
                extras.append(key)
        if extras and not ignore_extras:
            raise ValueError(f"not connection settings: {sorted(extras)}")
        return cls(**kwargs)

    def as_librdkafka_dict(self, plaintext_secrets: bool = True) -> dict:
        """The non-empty settings as a librdkafka dict (secrets shown as *** unless plaintext)."""
        out = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is None:
                continue
            if field.name == "oauth_cb":
                out["oauth_cb"] = value
                continue
            if field.name in _SECRETS and not plaintext_secrets:
                value = "***"
            out[field.name.replace("_", ".")] = value
        return out

    def __repr__(self) -> str:  # never print secrets
        return f"ConnectionConfig({self.as_librdkafka_dict(plaintext_secrets=False)})"

    __str__ = __repr__


def connection_dict(broker_address: "str | ConnectionConfig") -> dict:
    """librdkafka settings for a broker address string or a ConnectionConfig."""
    if isinstance(broker_address, ConnectionConfig):
        return broker_address.as_librdkafka_dict()
    return {"bootstrap.servers": broker_address}

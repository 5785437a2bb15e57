"""ConnectionConfig behaves as in Quix Streams 3.28 (same program, outputs compared byte for byte)."""

PROGRAM = r'''
import json, os
from quixstreams.kafka.configuration import ConnectionConfig

def show(label, func):
    try:
        print(label, func())
    except Exception as exc:  # the type differs (pydantic ValidationError vs ValueError): both are ValueError
        print(label, "ValueError" if isinstance(exc, ValueError) else type(exc).__name__)

c = ConnectionConfig(bootstrap_servers="b:9093", security_protocol="SASL_SSL", sasl_mechanism="scram-sha-256",
                     sasl_username="user", sasl_password="s3cret", ssl_endpoint_identification_algorithm="NONE",
                     sasl_kerberos_min_time_before_relogin="60000", enable_ssl_certificate_verification="false")
show("repr", lambda: repr(c))
show("str", lambda: str(c))
show("secret", lambda: repr(c.sasl_password))
show("plain", lambda: c.sasl_password.get_secret_value())
show("dict", lambda: c.as_librdkafka_dict())
show("masked", lambda: c.as_librdkafka_dict(plaintext_secrets=False))
show("from", lambda: ConnectionConfig.from_librdkafka_dict(
    {"bootstrap.servers": "x:1", "sasl.mechanisms": "PLAIN", "linger.ms": 5}, ignore_extras=True).as_librdkafka_dict())
show("extras", lambda: ConnectionConfig.from_librdkafka_dict({"bootstrap.servers": "x:1", "linger.ms": 5}))
show("upper-case field", lambda: ConnectionConfig(BOOTSTRAP_SERVERS="up").as_librdkafka_dict())
show("bad protocol", lambda: ConnectionConfig(bootstrap_servers="b", security_protocol="bogus"))
show("unknown", lambda: ConnectionConfig(bootstrap_servers="b", linger_ms=5))
show("oauth import", lambda: ConnectionConfig(bootstrap_servers="b", oauth_cb="json.dumps").oauth_cb is json.dumps)
show("oauth bad", lambda: ConnectionConfig(bootstrap_servers="b", oauth_cb="nope.missing"))
os.environ["SASL_USERNAME"] = "from-env"
os.environ["BOOTSTRAP_SERVERS"] = "env:9092"
show("env", lambda: ConnectionConfig().as_librdkafka_dict())
show("missing", lambda: (os.environ.pop("BOOTSTRAP_SERVERS"), ConnectionConfig())[1])
'''


def test_connection_config_matches_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert "SecretStr('**********')" in out.edge and "s3cret" in out.edge  # plain only where asked

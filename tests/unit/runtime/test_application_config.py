"""Application construction (no connection is opened until run/setup)."""

import pytest

from stream_edge import Application
from stream_edge.kafka import ConnectionConfig


def test_arguments_are_validated_with_clear_errors(monkeypatch):
    monkeypatch.delenv("Quix__Broker__Address", raising=False)
    monkeypatch.delenv("Quix__Sdk__Token", raising=False)
    with pytest.raises(ValueError, match='Either "broker_address" or "quix_sdk_token" must be provided'):
        Application(loglevel=None)
    with pytest.raises(ValueError, match="processing_guarantee"):
        Application("b:9092", processing_guarantee="at-most-once", loglevel=None)
    with pytest.raises(ValueError, match="auto_offset_reset"):
        Application("b:9092", auto_offset_reset="smallest", loglevel=None)
    with pytest.raises(ValueError, match="Quix Cloud"):
        Application(quix_sdk_token="token", loglevel=None)


def test_defaults_env_and_connection_config(monkeypatch):
    monkeypatch.setenv("Quix__Consumer__Group", "from-env")
    app = Application("b:9092", loglevel=None)
    cfg = app.config
    assert (cfg.consumer_group, cfg.auto_offset_reset, cfg.commit_interval, cfg.commit_every) == ("from-env", "latest", 5.0, 0)
    assert cfg.processing_guarantee == "at-least-once" and not cfg.exactly_once
    monkeypatch.delenv("Quix__Consumer__Group")
    assert Application("b:9092", loglevel=None).config.consumer_group == "quixstreams-default"

    conn = ConnectionConfig(bootstrap_servers="b:9093", security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
                            sasl_username="u", sasl_password="p")
    app = Application(conn, consumer_group="g", processing_guarantee="exactly-once", loglevel=None,
                      consumer_extra_config={"fetch.min.bytes": 10})
    consumer_cfg = app._consumer._config
    assert consumer_cfg["sasl.password"] == "p" and consumer_cfg["security.protocol"] == "sasl_ssl"
    assert consumer_cfg["enable.auto.commit"] is False and consumer_cfg["fetch.min.bytes"] == 10
    producer_cfg = app._producer._producer._config
    assert producer_cfg["transactional.id"].startswith("g-") and producer_cfg["enable.idempotence"] is True


def test_topic_defaults_follow_v3():
    app = Application("b:9092", consumer_group="g", loglevel=None)
    topic = app.topic("t")
    assert type(topic.value_deserializer).__name__ == "JSONDeserializer"
    assert type(topic.key_deserializer).__name__ == "BytesDeserializer"
    assert type(topic.value_serializer).__name__ == "JSONSerializer"
    assert topic.config.num_partitions == 1

"""Edge service configuration: defaults, validation errors that name the variable."""

from __future__ import annotations

import json

import pytest

from pipelines.edge_service import EdgeConfig, EdgeConfigError, timeout_event


def test_broker_address_is_required_and_the_error_says_which_variable() -> None:
    with pytest.raises(EdgeConfigError, match="Quix__Broker__Address"):
        EdgeConfig.from_env({})


def test_defaults_and_kafka_bootstrap_fallback() -> None:
    config = EdgeConfig.from_env({"KAFKA_BOOTSTRAP": "127.0.0.1:9092"})
    assert config.broker_address == "127.0.0.1:9092"
    assert config.consumer_group == "stream-edge"
    assert config.processing_guarantee == "at-least-once"
    assert config.stream_timeout_ms == 0
    assert config.storage_url.startswith("file:///")
    assert config.kafka_metadata is True
    assert EdgeConfig.from_env({"KAFKA_BOOTSTRAP": "b:1", "LAKE_KAFKA_METADATA": "off"}).kafka_metadata is False


@pytest.mark.parametrize("name,value,fragment", [
    ("EDGE_COMMIT_INTERVAL", "soon", "EDGE_COMMIT_INTERVAL must be a float"),
    ("EDGE_STREAM_TIMEOUT_MS", "-5", "EDGE_STREAM_TIMEOUT_MS must not be negative"),
    ("EDGE_PROCESSING_GUARANTEE", "at-most-once", "EDGE_PROCESSING_GUARANTEE"),
    ("LAKE_KAFKA_METADATA", "maybe", "LAKE_KAFKA_METADATA must be true or false"),
])
def test_bad_values_name_the_variable(name: str, value: str, fragment: str) -> None:
    with pytest.raises(EdgeConfigError, match=fragment):
        EdgeConfig.from_env({"Quix__Broker__Address": "b:9092", name: value})


def test_timeout_event_matches_the_seed_format() -> None:
    assert json.loads(timeout_event(b"sensor-a", 1745311234567)) == {
        "ts_ms": 1745311234567, "stream": "sensor-a", "event": "stream_timeout"}
    assert json.loads(timeout_event(7, 1))["stream"] == "7"

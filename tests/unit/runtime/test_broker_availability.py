"""BrokerAvailability: all-brokers-down reports, probes and the timeout (fake clock and errors)."""

import pytest
from confluent_kafka import KafkaError

from stream_edge.kafka import Consumer, Producer
from stream_edge.kafka.availability import BrokerAvailability, KafkaBrokerUnavailableError


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def failing_probe():
    raise RuntimeError("no broker")


def test_raises_only_after_the_timeout_while_probes_fail():
    clock, logged = Clock(), []
    availability = BrokerAvailability(clock=clock)
    availability.check(30, failing_probe)  # nothing reported yet: no probe, no error
    on_error = availability.wrap(logged.append)
    on_error(KafkaError(KafkaError._TRANSPORT))
    assert availability.down_since is None and len(logged) == 1  # a transient error is no outage
    on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert availability.down_since == 100.0
    clock.now = 125.0
    availability.check(30, failing_probe)  # still inside the timeout
    clock.now = 131.0
    with pytest.raises(KafkaBrokerUnavailableError, match="31s"):
        availability.check(30, failing_probe)


def test_a_successful_probe_clears_the_outage_and_zero_disables():
    clock = Clock()
    availability = BrokerAvailability(clock=clock)
    availability.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now = 200.0
    availability.check(30, lambda: None)
    assert availability.down_since is None
    availability.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now = 10_000.0
    availability.check(0, failing_probe)  # 0 disables: never raises
    with pytest.raises(ValueError):
        availability.check(-1, failing_probe)


def test_clients_expose_the_documented_check():
    for client in (Producer("127.0.0.1:1"), Consumer("127.0.0.1:1", "g", "earliest")):
        client.raise_if_broker_unavailable(120.0)  # no outage reported: returns at once
        assert not client.instantiated  # and created no librdkafka handle


def test_a_consumer_whose_brokers_are_all_gone_raises_after_the_timeout():
    """librdkafka itself reports the outage: a consumer pointed at a closed port."""
    import socket
    import time

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    consumer = Consumer(f"127.0.0.1:{port}", "g", "earliest", extra_config={"log_level": 0})
    consumer.subscribe(["t"])
    deadline = time.monotonic() + 20
    with pytest.raises(KafkaBrokerUnavailableError, match="unavailable"):
        while time.monotonic() < deadline:
            consumer.consume(1, 0.2)
            consumer.raise_if_broker_unavailable(1.0)
    consumer.close()

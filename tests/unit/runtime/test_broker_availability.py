"""BrokerAvailability: all-brokers-down reports, probes and the timeout (fake clock and errors)."""

import pytest
from confluent_kafka import KafkaError

from stream_edge.kafka.availability import BrokerAvailability, KafkaBrokerUnavailableError


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def failing_probe():
    raise RuntimeError("no broker")


def test_raises_only_after_the_timeout_while_probes_fail():
    clock = Clock()
    availability = BrokerAvailability(timeout=30, clock=clock)
    availability.check(failing_probe)  # nothing reported yet: no probe, no error
    availability.error_callback("consumer")(KafkaError(KafkaError._TRANSPORT))
    assert availability.down_since is None  # a transient error is not an outage
    availability.error_callback("consumer")(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    assert availability.down_since == 100.0
    clock.now = 125.0
    availability.check(failing_probe)  # still inside the timeout
    clock.now = 131.0
    with pytest.raises(KafkaBrokerUnavailableError, match="31s"):
        availability.check(failing_probe)


def test_a_successful_probe_clears_the_outage_and_zero_disables():
    clock = Clock()
    availability = BrokerAvailability(timeout=30, clock=clock)
    availability.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now = 200.0
    availability.check(lambda: None)
    assert availability.down_since is None
    disabled = BrokerAvailability(timeout=0, clock=clock)
    disabled.on_error(KafkaError(KafkaError._ALL_BROKERS_DOWN))
    clock.now = 10_000.0
    disabled.check(failing_probe)  # never raises
    with pytest.raises(ValueError):
        BrokerAvailability(timeout=-1)

"""BrokerAvailability: stop the application when every broker stays unreachable for too long.

librdkafka reconnects forever on its own; an application whose brokers are all gone would wait
silently. As in Quix Streams 3.28, each Kafka client (``Producer``, ``Consumer``) keeps one of these:
its ``error_cb`` reports ``_ALL_BROKERS_DOWN`` (:meth:`on_error`), and
``client.raise_if_broker_unavailable(timeout)`` (:meth:`check`) raises
:class:`KafkaBrokerUnavailableError` once every broker has been down for longer than ``timeout``,
so the orchestrator (systemd, Docker) restarts the process with fresh connections. The runner
calls it between batches with ``Application(broker_availability_timeout=...)``; ``0`` disables it.
While the brokers are believed down, :meth:`check` probes the cluster with a short metadata
request (at most every few seconds) to notice that they came back.

Example::

    >>> availability = BrokerAvailability()
    >>> availability.check(120.0, probe=lambda: None)  # nothing reported: no probe, no error
    >>> availability.down_since is None
    True
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional

from confluent_kafka import KafkaError

__all__ = ("BrokerAvailability", "KafkaBrokerUnavailableError", "AvailabilityChecks")

logger = logging.getLogger("stream_edge")
PROBE_EVERY = 5.0  # seconds between metadata probes while the brokers are believed down


class KafkaBrokerUnavailableError(Exception):
    """Every Kafka broker stayed unreachable for longer than ``broker_availability_timeout``."""


class BrokerAvailability:
    """Tracks "all brokers down" reports of the application's clients (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.down_since: Optional[float] = None
        self._next_probe = 0.0

    def wrap(self, error_callback: Callable[[KafkaError], None]) -> Callable[[KafkaError], None]:
        """An ``error_cb`` calling ``error_callback`` and recording outages."""

        def on_error(error: KafkaError) -> None:
            error_callback(error)
            self.on_error(error)

        return on_error

    def on_error(self, error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN and self.down_since is None:
            self.down_since = self._clock()

    def reachable(self) -> None:
        """The cluster answered (a batch arrived, a commit succeeded, a probe worked)."""
        self.down_since = None

    def check(self, timeout: float, probe: Callable[[], None]) -> None:
        """Raise if the brokers are down for longer than ``timeout`` seconds (0: never);
        ``probe()`` raises while they are unreachable."""
        if timeout < 0:
            raise ValueError(f"broker availability timeout must be >= 0, got {timeout}")
        if self.down_since is None or not timeout:
            return
        now = self._clock()
        if now >= self._next_probe:
            self._next_probe = now + PROBE_EVERY
            try:
                probe()
            except Exception:  # noqa: BLE001 - any failure means "still unreachable"
                pass
            else:
                logger.info("Kafka brokers are reachable again after %.0fs", now - self.down_since)
                self.down_since = None
                return
        if now - self.down_since > timeout:
            raise KafkaBrokerUnavailableError(
                f"all Kafka brokers have been unavailable for {now - self.down_since:.0f}s "
                f"(broker_availability_timeout={timeout:g}s); stopping so that the process can be "
                f"restarted with fresh connections")


class AvailabilityChecks:
    """What ``Producer`` and ``Consumer`` share: ``instantiated`` and
    ``raise_if_broker_unavailable``. A client sets ``_availability``, keeps its librdkafka handle
    in ``_inner`` and returns it (created on demand) from ``_client()``."""

    _availability: BrokerAvailability
    _inner: Any

    def _client(self) -> Any:  # pragma: no cover - provided by the client
        raise NotImplementedError

    @property
    def instantiated(self) -> bool:
        """Whether the librdkafka client exists yet (it is created on first use)."""
        return self._inner is not None

    def raise_if_broker_unavailable(self, timeout: float) -> None:
        """Raise :class:`KafkaBrokerUnavailableError` if every broker has been unavailable for
        longer than ``timeout`` seconds (probing the cluster while it is believed down)."""
        self._availability.check(timeout, self._probe)

    def _probe(self) -> None:
        if not self._client().list_topics(timeout=2).brokers:
            raise ConnectionError("no broker in the cluster metadata")

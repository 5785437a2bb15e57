"""EdgeMetrics' readiness and liveness rules (a fake clock) and the MetricsServer's bounds: its
bind address, a request timeout that drops silent clients, and a fixed pool of workers."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request

from stream_edge.service.http import MetricsServer
from stream_edge.service.metrics import EdgeMetrics
from stream_edge.service.settings import ServiceSettings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def started(clock: Clock, **limits: float) -> EdgeMetrics:
    metrics = EdgeMetrics(clock=clock, **limits)
    metrics.on_start(["t"], consumer=None)
    metrics.on_assign([("t", 0)])
    return metrics


def test_ready_follows_the_loop_heartbeat_not_checkpoints():
    clock = Clock()
    metrics = started(clock, ready_stall_seconds=10, live_stall_seconds=30)
    for _ in range(20):  # idle for 100 s, no checkpoint at all: the empty polls keep it ready
        clock.now += 5
        metrics.on_loop(None)
        assert metrics.ready and metrics.live
    clock.now += 11  # the loop stopped going round
    report = metrics.readiness()
    assert not report["ready"] and "has not gone round for 11s" in report["reason"] and metrics.live
    clock.now += 20
    assert not metrics.live and "wedged" in metrics.liveness()["reason"]
    metrics.on_loop(None)
    assert metrics.ready and metrics.live


def test_a_partition_blocked_longer_than_the_limit_is_not_ready_and_no_partition_not_ready():
    clock = Clock()
    metrics = started(clock, ready_paused_seconds=60)
    blocked_at = clock.now
    clock.now += 59
    metrics.on_loop(blocked_at)
    assert metrics.ready
    clock.now += 2
    metrics.on_loop(blocked_at)
    assert not metrics.ready and metrics.readiness()["blocked_partition_age_s"] == 61.0 and metrics.live
    metrics.on_loop(None)  # committed again
    assert metrics.ready
    metrics.on_revoke([("t", 0)], lost=False)
    assert metrics.readiness()["reason"] == "no partition assigned"
    metrics.on_stop(None)
    assert metrics.readiness()["reason"] == "the pipeline stopped"


def test_metrics_bind_loopback_by_default_and_the_settings_carry_host_and_limits():
    settings = ServiceSettings.resolve({"Quix__Broker__Address": "k:1"})
    assert settings.metrics_host == "127.0.0.1" and settings.dead_letter_topic == ""
    assert "dead_letter_topic" not in settings.application_kwargs()
    settings = ServiceSettings.resolve({"Quix__Broker__Address": "k:1", "STREAM_EDGE_METRICS_HOST": "0.0.0.0",
                                        "STREAM_EDGE_READY_STALL_SECONDS": "7"},
                                       flags={"dead_letter_topic": "edge-dlq"})
    assert settings.metrics_host == "0.0.0.0" and settings.ready_stall_seconds == 7.0
    assert settings.source("dead_letter_topic") == "flag --dead-letter-topic"
    assert settings.application_kwargs()["dead_letter_topic"] == "edge-dlq"
    server = MetricsServer(EdgeMetrics(), 0).start()
    try:
        assert server.host == "127.0.0.1"
    finally:
        server.stop()


def test_silent_clients_time_out_and_never_take_more_than_the_pool():
    server = MetricsServer(EdgeMetrics(), 0, request_timeout=0.5, workers=2).start()
    try:
        before = threading.active_count()
        silent = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(6)]  # send nothing
        # Six silent connections hold at most the two workers, each for the request timeout; the
        # rest wait in the listen backlog, then a normal request is answered.
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz", timeout=10) as response:
            assert response.status == 200 and json.loads(response.read())["live"] is True
        assert threading.active_count() - before <= 2
        for sock in silent:
            sock.settimeout(10)
            assert sock.recv(1024) == b""  # closed by the server after the timeout, nothing answered
            sock.close()
    finally:
        server.stop()

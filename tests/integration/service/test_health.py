"""/readyz and /healthz on the real broker: an idle healthy pipeline is ready; a loop wedged in a
user function is neither ready nor live; a partition stuck behind sink backpressure makes the
instance not ready while it stays live. Each recovers when the cause goes away."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from typing import Callable

import pytest

from stream_edge.service.http import MetricsServer
from stream_edge.service.metrics import EdgeMetrics
from stream_edge.sinks import BatchingSink, SinkBackpressureError

pytestmark = pytest.mark.integration


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_for(what: str, check: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


class Served:
    """An Application running in a thread with EdgeMetrics served on a loopback port."""

    def __init__(self, app, **limits: float) -> None:
        self.app = app
        self.metrics = EdgeMetrics(commit_interval=0.2, **limits)
        app.add_run_observer(self.metrics)
        self.server = MetricsServer(self.metrics, 0).start()
        self.failure: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            self.app.run()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.failure.append(exc)

    def __enter__(self) -> "Served":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.app.stop()
        self.thread.join(30)
        self.server.stop()
        assert not self.failure, self.failure

    def ready(self) -> tuple[int, dict]:
        return get(f"http://127.0.0.1:{self.server.port}/readyz")

    def live(self) -> tuple[int, dict]:
        return get(f"http://127.0.0.1:{self.server.port}/healthz")


def test_an_idle_healthy_pipeline_is_ready_and_live(new_app, make_topic, produce):
    src = make_topic(partitions=2)
    produce(src, [(b"k", {"i": i}) for i in range(5)])
    app, _ = new_app(commit_interval=0.2, consumer_poll_timeout=0.2)
    app.dataframe(app.topic(src)).update(lambda v: None)
    with Served(app, ready_stall_seconds=1.0, live_stall_seconds=1.0) as served:
        wait_for("ready", lambda: served.ready()[0] == 200)
        # Idle for several times the stall limit: the loop's empty polls keep it ready and live.
        for _ in range(6):
            time.sleep(0.5)
            status, report = served.ready()
            assert status == 200 and report["assigned_partitions"] == 2 and report["loop_age_s"] < 1.0, report
            assert served.live()[0] == 200
        assert served.server.host == "127.0.0.1"


def test_a_loop_wedged_in_a_user_function_is_neither_ready_nor_live(new_app, make_topic, produce):
    src = make_topic()
    release = threading.Event()
    entered = threading.Event()

    def step(value):
        if value.get("block"):
            entered.set()
            release.wait(30)  # a user function stuck on a lock, a slow service...
        return value

    app, _ = new_app(commit_interval=0.2, consumer_poll_timeout=0.2)
    app.dataframe(app.topic(src)).apply(step)
    with Served(app, ready_stall_seconds=1.0, live_stall_seconds=1.5) as served:
        wait_for("ready", lambda: served.ready()[0] == 200)
        produce(src, [(b"k", {"block": True})])
        assert entered.wait(20)
        wait_for("not live", lambda: served.live()[0] == 503)
        status, report = served.ready()
        assert status == 503 and "processing loop has not gone round" in report["reason"]
        assert "wedged" in served.live()[1]["reason"]
        release.set()
        wait_for("live and ready again", lambda: served.live()[0] == 200 and served.ready()[0] == 200)


class RefusingSink(BatchingSink):
    """A destination that backpressures until ``accept`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.accept = threading.Event()
        self.written: list = []

    def write(self, batch):
        if not self.accept.is_set():
            raise SinkBackpressureError(retry_after=0.2)
        self.written.extend(item.value["i"] for item in batch)


def test_a_partition_stuck_behind_sink_backpressure_makes_the_instance_not_ready(new_app, make_topic, produce):
    src = make_topic()
    produce(src, [(b"k", {"i": i}) for i in range(5)])
    sink = RefusingSink()
    app, _ = new_app(commit_interval=0.2, consumer_poll_timeout=0.2)
    app.dataframe(app.topic(src)).sink(sink)
    with Served(app, ready_stall_seconds=5.0, ready_paused_seconds=1.0, live_stall_seconds=5.0) as served:
        # Paused, resumed, replayed and refused again every 0.2 s: blocked since the first pause.
        wait_for("not ready", lambda: "paused by sink backpressure" in served.ready()[1].get("reason", ""))
        status, report = served.ready()
        assert status == 503 and report["blocked_partition_age_s"] >= 1.0 and report["assigned_partitions"] == 1
        assert served.live()[0] == 200  # the loop itself goes round: not a liveness failure
        sink.accept.set()
        wait_for("ready again", lambda: served.ready()[0] == 200)
        assert sorted(set(sink.written)) == list(range(5))
        assert served.ready()[1]["blocked_partition_age_s"] is None

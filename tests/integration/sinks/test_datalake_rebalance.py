"""Two instances of the data-lake pipeline in one consumer group: after a rebalance each silent
key is reported once, by the instance that owns its partition (revoked partitions' keys are
forgotten by the instance that lost them)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from tests.integration.running_program import RunningProgram

pytestmark = pytest.mark.integration

PROGRAM = str(Path(__file__).with_name("silence_instance_program.py"))
KEYS = [f"sensor-{i}" for i in range(12)]


class Instance(RunningProgram):
    """A program instance; its stderr interleaved with its stdout."""

    def __init__(self, args: list[str], name: str) -> None:
        super().__init__([sys.executable, PROGRAM, *args, name], name=name, merge_stderr=True)

    def assigned(self) -> list[list[int]]:
        return [json.loads(line.split(" ", 2)[2]) for line in self.lines() if line.startswith("ASSIGNED ")]

    def silent(self) -> list[str]:
        return [line.split()[2] for line in self.lines() if line.startswith("SILENT ")]

    def log(self) -> str:
        return "".join(self.lines())

    def stop(self) -> str:
        """SIGTERM, wait (killed after 60 s); everything it printed."""
        return self.finish(60, sig=signal.SIGTERM)[1]


def wait_for(predicate, timeout: float, what: str, *instances: Instance) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        for inst in instances:
            if inst.proc.poll() is not None:
                pytest.fail(f"instance {inst.name} exited ({inst.proc.returncode}):\n" + inst.log())
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}:\n" + "\n\n".join(f"[{i.name}]\n" + i.log() for i in instances))


def test_each_silent_key_is_reported_once_across_a_rebalance(kafka_bootstrap, make_topic, tmp_path):
    topic = make_topic(partitions=4, prefix="silence-rebalance")
    group = f"silence-{uuid.uuid4().hex[:8]}"
    args = [kafka_bootstrap, topic, group, (tmp_path / "lake").as_uri()]
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 5})

    def produce_round() -> None:
        for key in KEYS:
            producer.produce(topic, json.dumps({"ts_ms": int(time.time() * 1000), "key": key}).encode(),
                             key.encode())
        assert producer.flush(10) == 0

    first = Instance(args, "A")
    second = None
    feeding = threading.Event()

    def feed() -> None:  # every key sends twice a second until told to stop
        while feeding.is_set():
            produce_round()
            time.sleep(0.5)

    feeder = threading.Thread(target=feed, daemon=True)
    try:
        wait_for(lambda: first.assigned() == [[0, 1, 2, 3]], 60, "A to own every partition", first)
        feeding.set()
        feeder.start()  # A now tracks every key, none of them silent
        time.sleep(1.0)
        second = Instance(args, "B")
        # The group rebalances: A keeps some partitions, B takes the others.
        wait_for(lambda: bool(second.assigned()) and len(first.assigned()) >= 2, 60, "the rebalance", first, second)
        # Keys keep arriving on their new owners for longer than the silence threshold (6 s) would
        # need to fire on A for keys it no longer owns.
        time.sleep(8.0)
        feeding.clear()
        feeder.join(10)
        wait_for(lambda: len(first.silent()) + len(second.silent()) >= len(KEYS), 60,
                 "every key to be reported silent", first, second)
        time.sleep(7.0)  # a duplicate report would come within one more threshold
        # B's share while the keys fell silent; read before the stops: when A leaves first, the
        # group hands every partition to B before B's own stop, a legitimate last assignment.
        owned_by_b = set(second.assigned()[-1])
    finally:
        feeding.clear()
        log_a = first.stop()
        log_b = second.stop() if second is not None else ""
    reports = first.silent() + second.silent()
    assert sorted(reports) == sorted(KEYS), f"each key once; got A={first.silent()} B={second.silent()}\n{log_a}\n{log_b}"
    assert first.silent() and second.silent(), "both instances own some partitions and report their keys"
    assert len(owned_by_b) in (1, 2, 3)

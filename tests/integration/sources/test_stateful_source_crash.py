"""A StatefulSource survives a SIGKILL of its application: the source's process goes with it, and
a restarted application recovers the source's state from its changelog topic and resumes from the
last flush(), so every record reaches the topic (at-least-once)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
TOTAL = 600
EVERY = 10

PROGRAM = r'''
import os
import sys
import time

from stream_edge import Application
from stream_edge.sources import StatefulSource

BROKER, GROUP, NAME, TOPIC, STATE_DIR, PID_FILE, TOTAL, EVERY = sys.argv[1:9]
TOTAL, EVERY = int(TOTAL), int(EVERY)


class Sequence(StatefulSource):
    def run(self):
        with open(PID_FILE, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        i = self.state.get("next", 0)
        print("start", i, flush=True)
        while self.running and i < TOTAL:
            msg = self.serialize(key=f"k{i}", value={"i": i})
            self.produce(key=msg.key, value=msg.value)
            i += 1
            if i % EVERY == 0:
                self.state.set("next", i)
                self.flush()
                time.sleep(0.02)


if __name__ == "__main__":
    app = Application(BROKER, consumer_group=GROUP, loglevel="WARNING", state_dir=STATE_DIR)
    app.add_source(Sequence(name=NAME), topic=app.topic(TOPIC))
    app.run()
    print("done", flush=True)
'''


def _committed_next(read_all, changelog: str) -> int:
    values = [orjson.loads(m.value()) for m in read_all(changelog) if m.key() == b'"next"']
    return values[-1] if values else 0


def _wait(condition, what: str, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_stateful_source_resumes_from_its_committed_state_after_sigkill(kafka_bootstrap, make_topic, read_all,
                                                                        tmp_path):
    topic = make_topic(prefix="stateful-src")
    group, name = f"crash-{uuid.uuid4().hex[:8]}", f"seq-{uuid.uuid4().hex[:6]}"
    changelog = f"changelog__{group}--source-{name}"
    script, pid_file = tmp_path / "program.py", tmp_path / "source.pids"
    script.write_text(PROGRAM)
    args = [sys.executable, str(script), kafka_bootstrap, group, name, topic, str(tmp_path / "state"),
            str(pid_file), str(TOTAL), str(EVERY)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        _wait(lambda: _committed_next(read_all, changelog) >= 10 * EVERY, "the source's first commits")
    finally:
        first.send_signal(signal.SIGKILL)
        out, err = first.communicate(timeout=30)
    assert out.startswith("start 0\n") and "done" not in out, err[-2000:]
    source_pid = int(pid_file.read_text().split()[0])
    _wait(lambda: _gone(source_pid), "the source's process to exit with its application")

    committed = _committed_next(read_all, changelog)
    produced = len(read_all(topic))
    assert 0 < committed < TOTAL and produced >= committed

    second = subprocess.run(args, capture_output=True, text=True, env=env, timeout=180)
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.splitlines() == [f"start {committed}", "done"]

    values = [orjson.loads(m.value())["i"] for m in read_all(topic)]
    assert set(values) == set(range(TOTAL))  # nothing lost
    assert values[produced] == committed  # the restart resumed at the committed state
    assert values[produced:] == list(range(committed, TOTAL))
    assert _committed_next(read_all, changelog) == TOTAL

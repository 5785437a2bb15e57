"""Window state on the real broker across failures: SIGKILL then restart on the same local state
(RocksDB) or on an empty one (rebuilt from the changelog), and a second consumer of the group
taking over a partition. Results must equal a recomputation of every window from the input."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

from stream_edge.dataframe.windows.aggregations import Sum
from stream_edge.dataframe.windows.fixed_engine import FixedWindowEngine

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).with_name("window_program.py")
KEYS = [f"sensor-{i}".encode() for i in range(12)]
N = 1200


def input_events(base: int):
    """Per key, event time moves 10 ms per message: ~10 messages per 100 ms window."""
    return [(KEYS[i % len(KEYS)], {"x": i}, base + (i // len(KEYS)) * 10) for i in range(N)]


def expected_windows(events):
    engine = FixedWindowEngine(100, 0, None, Sum())
    states, out = {}, set()
    for key, value, ts in events:
        ks = states.setdefault(key, engine.new_key_state())
        out.update((key, start, end, result) for start, end, result in engine.process_final(ks, value["x"], ts))
    return out


class Program:
    """The window program as a subprocess; stdout lines are read by a thread (no blocking reads)."""

    def __init__(self, bootstrap, src, dst, group, state_dir, sleep_s, idle, log_path):
        self.log_path = log_path
        self._log = open(log_path, "w")
        self.proc = subprocess.Popen([sys.executable, str(PROGRAM), bootstrap, src, dst, group, str(state_dir),
                                      str(sleep_s), str(idle)], stdout=subprocess.PIPE, stderr=self._log, text=True)
        self.lines: "queue.Queue[str]" = queue.Queue()
        self.stdout: list = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.stdout.append(line)
            self.lines.put(line)

    def wait_for(self, count, timeout=90, partitions=()):
        """Wait until ``count`` messages (of each of ``partitions``) are processed, at most ``timeout`` s."""
        seen, deadline = {}, time.monotonic() + timeout

        def done():
            if partitions:
                return all(seen.get(str(p), 0) >= count for p in partitions)
            return sum(seen.values()) >= count

        while not done() and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self.lines.empty():
                    break
                continue
            if line.startswith("processed"):
                seen[line.split()[1]] = seen.get(line.split()[1], 0) + 1
        assert done(), f"no progress {seen}:\n{self.stderr()[-3000:]}"

    def finish(self, sig=None, timeout=180):
        """Signal (optionally) and wait; return (stdout, stderr, returncode)."""
        if sig is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(10)
        self._log.close()
        return "".join(self.stdout), self.stderr(), self.proc.returncode

    def stderr(self):
        return Path(self.log_path).read_text()


def committed_total(bootstrap, group, topic):
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=10)
    finally:
        consumer.close()
    return sum(max(tp.offset, 0) for tp in tps)


def results(read_all, dst, expected):
    messages = read_all(dst, len(expected), timeout=60, settle=1.5)
    got = [(m.key(), *(lambda r: (r["start"], r["end"], r["value"]))(orjson.loads(m.value()))) for m in messages]
    for m in messages:
        assert m.timestamp()[1] == orjson.loads(m.value())["start"]
    return got


@pytest.mark.parametrize("restart_on", ["same-rocksdb", "empty-state-dir"])
def test_window_state_survives_sigkill(kafka_bootstrap, make_topic, send, read_all, group, tmp_path, restart_on):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    base = (int(time.time() * 1000) // 1000) * 1000
    events = input_events(base)
    send(src, events)
    expected = expected_windows(events)

    first = Program(kafka_bootstrap, src, dst, group, tmp_path / "one", 0.004, 0, tmp_path / "first.log")
    first.wait_for(500)  # several 0.3 s checkpoints are committed by now
    first.finish(signal.SIGKILL)
    resumed_at = committed_total(kafka_bootstrap, group, src)
    assert 0 < resumed_at < N, "the killed instance should have committed some checkpoints, not all"
    state_dir = tmp_path / ("one" if restart_on == "same-rocksdb" else "two")
    second = Program(kafka_bootstrap, src, dst, group, state_dir, 0, 4, tmp_path / "second.log")
    out, err, code = second.finish()
    assert code == 0 and "stopped cleanly" in out, err[-3000:]
    # the restart resumed from the committed offsets: windows spanning the crash are only right
    # if their earlier messages came back from the state store
    assert out.count("processed") == N - resumed_at
    if restart_on == "empty-state-dir":
        assert "recovering from changelog" in err

    got = results(read_all, dst, expected)
    # at-least-once: windows emitted after the last checkpoint may be emitted again, never different
    assert set(got) == expected
    assert len(got) >= len(expected)


def test_second_consumer_takes_over_a_partition_from_the_changelog(kafka_bootstrap, make_topic, send, read_all,
                                                                    group, tmp_path):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    base = (int(time.time() * 1000) // 1000) * 1000
    events = input_events(base)
    expected = expected_windows(events)
    half = len(events) // 2
    send(src, events[:half])

    first = Program(kafka_bootstrap, src, dst, group, tmp_path / "one", 0, 0, tmp_path / "first.log")
    second = None
    try:
        first.wait_for(half)  # both partitions have window state and changelog records
        # a second instance with its own (empty) state directory joins the group: the partitions
        # are split and the one it takes over is rebuilt from the changelog before processing
        second = Program(kafka_bootstrap, src, dst, group, tmp_path / "two", 0, 0, tmp_path / "second.log")
        deadline = time.monotonic() + 90
        while "recovered" not in second.stderr() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "recovering from changelog" in second.stderr(), second.stderr()[-3000:]
        send(src, events[half:])  # the rest continues the open windows on both instances
        second.wait_for(1, timeout=90)
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline and set(got) != expected:
            got = results(read_all, dst, expected)
    finally:
        outs = [p.finish(signal.SIGTERM) for p in (first, second) if p is not None]
    for out, err, code in outs:
        assert "stopped cleanly" in out, err[-3000:]
    assert set(got) == expected

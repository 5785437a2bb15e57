"""Window state on the real broker across failures: SIGKILL then restart on the same local state
(RocksDB) or on an empty one (rebuilt from the changelog), and a second consumer of the group
taking over a partition. Results must equal a recomputation of every window from the input."""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import orjson
import pytest
from tests.integration.running_program import RunningProgram

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


class Program(RunningProgram):
    """The window program as a subprocess (every wait has a deadline: see :class:`RunningProgram`);
    its stderr, the runner's log, goes to ``log_path``."""

    def __init__(self, bootstrap, src, dst, group, state_dir, sleep_s, idle, log_path):
        super().__init__([sys.executable, str(PROGRAM), bootstrap, src, dst, group, str(state_dir),
                          str(sleep_s), str(idle)], stderr_path=log_path)

    def wait_for_processed(self, count, timeout=90):
        """Wait until the program has reported ``count`` processed messages."""
        self.wait_for(f"{count} processed messages",
                      lambda lines: sum(line.startswith("processed") for line in lines) >= count, timeout=timeout)


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
    first.wait_for_processed(500)  # several 0.3 s checkpoints are committed by now
    first.finish(180, sig=signal.SIGKILL)
    resumed_at = committed_total(kafka_bootstrap, group, src)
    assert 0 < resumed_at < N, "the killed instance should have committed some checkpoints, not all"
    state_dir = tmp_path / ("one" if restart_on == "same-rocksdb" else "two")
    second = Program(kafka_bootstrap, src, dst, group, state_dir, 0, 4, tmp_path / "second.log")
    code, out, err = second.finish(180)
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
        first.wait_for_processed(half)  # both partitions have window state and changelog records
        # a second instance with its own (empty) state directory joins the group: the partitions
        # are split and the one it takes over is rebuilt from the changelog before processing
        second = Program(kafka_bootstrap, src, dst, group, tmp_path / "two", 0, 0, tmp_path / "second.log")
        deadline = time.monotonic() + 90
        while "recovered" not in second.stderr() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert "recovering from changelog" in second.stderr(), second.stderr()[-3000:]
        send(src, events[half:])  # the rest continues the open windows on both instances
        second.wait_for_processed(1, timeout=90)
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline and set(got) != expected:
            got = results(read_all, dst, expected)
    finally:
        outs = [p.finish(180, sig=signal.SIGTERM) for p in (first, second) if p is not None]
    for code, out, err in outs:
        assert "stopped cleanly" in out, err[-3000:]
    assert set(got) == expected

"""Window state on the real broker across failures: SIGKILL then restart on the same local state
(RocksDB) or on an empty one (rebuilt from the changelog), and a second consumer of the group
taking over a partition. Results must equal a recomputation of every window from the input."""

from __future__ import annotations

import signal
import subprocess
import sys
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


def start(bootstrap, src, dst, group, state_dir, sleep_s, idle):
    return subprocess.Popen([sys.executable, str(PROGRAM), bootstrap, src, dst, group, str(state_dir), str(sleep_s),
                             str(idle)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for(proc, count, timeout=90):
    seen, deadline = 0, time.monotonic() + timeout
    while seen < count and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line.startswith("processed")
    assert seen >= count, f"no progress:\n{proc.stderr.read()[-3000:] if proc.poll() is not None else ''}"


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

    first = start(kafka_bootstrap, src, dst, group, tmp_path / "one", 0.004, 0)
    wait_for(first, 500)  # several 0.3 s checkpoints are committed by now
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    state_dir = tmp_path / ("one" if restart_on == "same-rocksdb" else "two")
    second = start(kafka_bootstrap, src, dst, group, state_dir, 0, 4)
    out, err = second.communicate(timeout=180)
    assert second.returncode == 0, err[-3000:]
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
    send(src, events)
    expected = expected_windows(events)

    first = start(kafka_bootstrap, src, dst, group, tmp_path / "one", 0.01, 0)
    wait_for(first, 200)
    # a second instance with its own (empty) state directory joins the group: the partitions are
    # split and the one it takes over is rebuilt from the changelog before it processes anything
    second = start(kafka_bootstrap, src, dst, group, tmp_path / "two", 0, 0)
    try:
        wait_for(second, 1, timeout=120)
        deadline, got = time.monotonic() + 120, []
        while time.monotonic() < deadline and set(got) != expected:
            got = results(read_all, dst, expected)
    finally:
        for proc in (first, second):
            proc.send_signal(signal.SIGTERM)
        outs = [proc.communicate(timeout=120) for proc in (first, second)]
    for out, err in outs:
        assert "stopped cleanly" in out, err[-3000:]
    assert "recovering from changelog" in outs[1][1], outs[1][1][-3000:]
    assert set(got) == expected

"""Kill the application mid-stream (SIGKILL), restart it: at-least-once loses nothing,
exactly-once duplicates nothing downstream (read with read_committed). SIGTERM stops gracefully."""

from __future__ import annotations

import collections
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).with_name("crash_program.py")
N = 400


def start(kafka_bootstrap, src, dst, group, guarantee, sleep_s, timeout=None):
    args = [sys.executable, str(PROGRAM), kafka_bootstrap, src, dst, group, guarantee, str(sleep_s)]
    if timeout:
        args.append(str(timeout))
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_progress(proc, count, timeout=60):
    """Read the program's stdout until it reports ``count`` processed messages."""
    seen, deadline = 0, time.monotonic() + timeout
    while seen < count and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen += line.startswith("processed")
    assert seen >= count, f"program made no progress:\n{proc.stderr.read() if proc.poll() is not None else ''}"


def crash_and_restart(kafka_bootstrap, make_topic, produce, guarantee):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    produce(src, [(f"k{i % 7}".encode(), {"id": i}) for i in range(N)])
    group = f"crash-{uuid.uuid4().hex[:8]}"
    first = start(kafka_bootstrap, src, dst, group, guarantee, 0.01)
    wait_for_progress(first, 150)  # several checkpoints (0.5 s) have been committed by now
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    second = start(kafka_bootstrap, src, dst, group, guarantee, 0.0, timeout=3)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err[-3000:]
    assert "stopped cleanly" in out
    return dst


def test_sigkill_at_least_once_loses_nothing(kafka_bootstrap, make_topic, produce, read_topic):
    dst = crash_and_restart(kafka_bootstrap, make_topic, produce, "at-least-once")
    ids = collections.Counter(orjson.loads(m.value())["id"] for m in read_topic(dst, N, timeout=60, settle=1))
    assert set(ids) == set(range(N))  # every message made it; replays after the crash may duplicate


def test_sigkill_exactly_once_duplicates_nothing(kafka_bootstrap, make_topic, produce, read_topic):
    dst = crash_and_restart(kafka_bootstrap, make_topic, produce, "exactly-once")
    messages = read_topic(dst, N, timeout=90, committed_only=True, settle=2)
    ids = collections.Counter(orjson.loads(m.value())["id"] for m in messages)
    assert set(ids) == set(range(N))
    assert max(ids.values()) == 1, {i: c for i, c in ids.items() if c > 1}
    # the killed instance did produce uncommitted records that read_committed hides
    everything = read_topic(dst, N, timeout=10, committed_only=False, settle=1)
    assert len(everything) >= len(messages)


def test_sigterm_stops_after_a_final_checkpoint(kafka_bootstrap, make_topic, produce, read_topic, committed):
    src, dst = make_topic(), make_topic()
    produce(src, [(b"k", {"id": i}) for i in range(50)])
    group = f"term-{uuid.uuid4().hex[:8]}"
    proc = start(kafka_bootstrap, src, dst, group, "at-least-once", 0.0)
    wait_for_progress(proc, 50)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "stopped cleanly" in out, err[-3000:]
    assert committed(group, src)[0] == 50  # the final checkpoint committed everything processed
    assert len(read_topic(dst, 50)) == 50


def test_two_instances_share_partitions_and_a_rebalance_loses_nothing(kafka_bootstrap, make_topic, produce,
                                                                       read_topic):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    produce(src, [(f"k{i % 11}".encode(), {"id": i}) for i in range(N)])
    group = f"scale-{uuid.uuid4().hex[:8]}"
    first = start(kafka_bootstrap, src, dst, group, "at-least-once", 0.02)
    second = None
    try:
        wait_for_progress(first, 30)
        # the second joins: a rebalance within ~0.5 s (batches are sized to take about that long)
        second = start(kafka_bootstrap, src, dst, group, "at-least-once", 0.02)
        wait_for_progress(second, 1)
        ids = {orjson.loads(m.value())["id"] for m in read_topic(dst, N, timeout=90)}
        assert ids == set(range(N))
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.send_signal(signal.SIGTERM)
    for proc in (first, second):
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and "stopped cleanly" in out, err[-3000:]
    by = collections.Counter(orjson.loads(m.value())["by"] for m in read_topic(dst, N, timeout=30, settle=1))
    assert set(by) == {first.pid, second.pid}  # both instances processed some of the partitions

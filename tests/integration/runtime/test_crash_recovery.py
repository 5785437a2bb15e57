"""Kill the application mid-stream (SIGKILL), restart it: at-least-once loses nothing,
exactly-once duplicates nothing downstream (read with read_committed). SIGTERM stops gracefully."""

from __future__ import annotations

import collections
import re
import signal
import sys
import uuid
from pathlib import Path

import orjson
import pytest
from tests.integration.running_program import RunningProgram

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).with_name("crash_program.py")
N = 400
# the runner logs each assignment; a non-empty list means the instance holds a partition
HOLDS_A_PARTITION = re.compile(r"partitions assigned: \[\(")


class Program(RunningProgram):
    """``crash_program.py`` in a subprocess (every wait has a deadline: see :class:`RunningProgram`)."""

    def __init__(self, kafka_bootstrap, src, dst, group, guarantee, sleep_s, timeout=None):
        args = [sys.executable, str(PROGRAM), kafka_bootstrap, src, dst, group, guarantee, str(sleep_s)]
        super().__init__(args + ([str(timeout)] if timeout else []))

    def wait_for_progress(self, count, timeout=60):
        """Wait until the program has reported ``count`` processed messages."""
        self.wait_for(f"{count} processed messages",
                      lambda lines: sum(line.startswith("processed") for line in lines) >= count,
                      timeout=timeout)


def crash_and_restart(kafka_bootstrap, make_topic, produce, guarantee):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    produce(src, [(f"k{i % 7}".encode(), {"id": i}) for i in range(N)])
    group = f"crash-{uuid.uuid4().hex[:8]}"
    first = Program(kafka_bootstrap, src, dst, group, guarantee, 0.01)
    first.wait_for_progress(150)  # several checkpoints (0.5 s) have been committed by now
    first.proc.send_signal(signal.SIGKILL)
    first.finish(10)
    # The restarted instance stops after this many idle seconds. Exactly once, the killed instance
    # may die between sending its offsets to its transaction and committing it: the broker then
    # holds the group's committed offsets as unstable (KIP-447) until it aborts that transaction
    # (transaction.timeout.ms, 10 s here, plus its 10 s abort check), and the new consumer gets no
    # message before: a 3 s idle limit stopped it cleanly with nothing processed (seen once in CI:
    # the output topic held only the killed producer's records).
    idle = 25 if guarantee == "exactly-once" else 3
    second = Program(kafka_bootstrap, src, dst, group, guarantee, 0.0, timeout=idle)
    code, out, err = second.finish(120)
    assert code == 0, err[-3000:]
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
    proc = Program(kafka_bootstrap, src, dst, group, "at-least-once", 0.0)
    proc.wait_for_progress(50)
    proc.proc.send_signal(signal.SIGTERM)
    code, out, err = proc.finish(60)
    assert code == 0 and "stopped cleanly" in out, err[-3000:]
    assert committed(group, src)[0] == 50  # the final checkpoint committed everything processed
    assert len(read_topic(dst, 50)) == 50


def test_two_instances_share_partitions_and_a_rebalance_loses_nothing(kafka_bootstrap, make_topic, produce,
                                                                       read_topic):
    src, dst = make_topic(partitions=2), make_topic(partitions=2)
    records = [(f"k{i % 11}".encode(), {"id": i}) for i in range(N)]  # the 11 keys land on both partitions
    produce(src, records[:N // 2])
    group = f"scale-{uuid.uuid4().hex[:8]}"
    first = Program(kafka_bootstrap, src, dst, group, "at-least-once", 0.02)
    second = None
    try:
        first.wait_for_progress(30)
        # The second joins while the first is mid-stream (its 200 messages take ~4 s): a rebalance.
        second = Program(kafka_bootstrap, src, dst, group, "at-least-once", 0.02)
        second.wait_for("a partition of its own", lambda lines: any(HOLDS_A_PARTITION.search(line) for line in lines),
                        stream="stderr", timeout=90)
        # Produced only now, so the second has work on any host, however late it joined.
        produce(src, records[N // 2:])
        second.wait_for_progress(1)
        ids = {orjson.loads(m.value())["id"] for m in read_topic(dst, N, timeout=90)}
        assert ids == set(range(N))
    finally:
        for program in (first, second):
            if program is not None:
                program.proc.send_signal(signal.SIGTERM)
    for program in (first, second):
        code, out, err = program.finish(60)
        assert code == 0 and "stopped cleanly" in out, err[-3000:]
    by = collections.Counter(orjson.loads(m.value())["by"] for m in read_topic(dst, N, timeout=30, settle=1))
    assert set(by) == {first.pid, second.pid}  # both instances processed some of the partitions

"""``StreamTimeoutTracker`` with quixstreams 3.28.1's signature (``check_interval_ms``,
``idle_exit_cycles``, ``thread_name``, ``logger``), its time hooks (``touch(now_ms=)``,
``check_now(now_ms=)``, ``tracker._now_ms = ...``) and its check-interval fallback: the same keys
fire at the same checks, with the same INFO lines, on both packages. Where the silence contract
(docs/design.md) differs from 3.28.1 (invalid arguments disable instead of raising, a raising
callback still counts as fired, log order) nothing is compared: docs/compatibility.md lists it."""

import pytest

from tests.compat.conftest import compare_section

pytestmark = pytest.mark.xdist_group("compat-tracker")  # one worker: one shared run

PROGRAM = r'''
import logging
import threading

from quixstreams.sinks.core.stream_timeout_tracker import StreamTimeoutTracker

lines = []


class Keep(logging.Handler):
    def emit(self, record):
        message = record.getMessage()
        if "timed out" in message:
            lines.append(f"{record.levelname} {message}")


log = logging.getLogger("silence-compat")
log.setLevel(logging.DEBUG)
log.addHandler(Keep())
log.propagate = False

print("== construction")
fired = []
tracker = StreamTimeoutTracker(1000, fired.append, check_interval_ms=250, idle_exit_cycles=5,
                               thread_name="silence-x", logger=log)
print("enabled", tracker.enabled, tracker._stream_timeout_ms, tracker._check_interval_ms)
for interval in (None, 0, -1, 2.5, True, "10", 50):
    print("interval", repr(interval), StreamTimeoutTracker(60_000, print, check_interval_ms=interval)._check_interval_ms)
for timeout in (1, 400, 2_000, 60_000):
    print("default interval", timeout, StreamTimeoutTracker(timeout, print)._check_interval_ms)
print("disabled", StreamTimeoutTracker(None, None).enabled)
off = StreamTimeoutTracker(None, None)
off.touch("a")
off.check_now()
off.start()
off.stop()
print("disabled start", [t.name for t in threading.enumerate() if t.name.startswith("StreamTimeoutTracker")])

print("== timeline")
tracker._now_ms = lambda: 10_000
for key in ("a", "b", b"c", 7, None):
    tracker.touch(key, topic="t", partition=0, offset=1)
tracker.touch("d", now_ms=10_600)
for now in (10_500, 10_999, 11_000, 11_300, 11_600):
    tracker.check_now(now_ms=now)
    print(now, sorted(map(repr, fired)))
tracker._now_ms = lambda: 12_000
tracker.touch("a")
tracker._now_ms = lambda: 13_000
tracker.check_now()
print("refired", sorted(map(repr, fired)))
tracker.touch("late", now_ms=13_000)
tracker.check_now(now_ms=16_000)
print("after ttl", sorted(map(repr, fired)), "late" in tracker._last_seen_by_stream)

print("== log lines")
# str keys only: bytes and int keys are written as the contract says ('sensor-a'), not repr()
print("\n".join(sorted(line for line in lines if any(f"Stream '{k}'" in line for k in "abd"))))

print("== thread")
done = threading.Event()
seen = []
threads = []


def on_silent(key):
    seen.append(key)
    threads.append(threading.current_thread().name)
    done.set()


# The thread must not self-terminate before the enumeration below: with the default 3 idle checks
# (60 ms here) a main thread that a loaded machine wakes late found it gone on one package only
live = StreamTimeoutTracker(100, on_silent, check_interval_ms=20, idle_exit_cycles=1_000_000,
                            thread_name="silence-live")
live.start()
live.touch("k")
print("fired", done.wait(30), seen, threads)
print("thread", [t.name for t in threading.enumerate() if t.name == "silence-live"][:1])
live.stop()
'''

SECTIONS = ["construction", "timeline", "log lines", "thread"]


@pytest.fixture(scope="module")
def outputs(run_both_module):
    return run_both_module(PROGRAM)


@pytest.mark.parametrize("section", SECTIONS)
def test_tracker_matches_quixstreams(outputs, section):
    shown = compare_section(outputs, section)
    assert shown.strip()


def test_keys_fire_once_per_silence(outputs):
    timeline = compare_section(outputs, "timeline").splitlines()
    assert timeline[2] == "11000 [\"'a'\", \"'b'\", '7', \"b'c'\"]"

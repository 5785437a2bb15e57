"""Cost of per-key silence tracking: StreamTimeoutTracker vs. a scan-every-key tracker.

    ./dev bench tracker_cost                  # 10k, 100k, 1M keys
    ./dev bench tracker_cost --sizes 10000,100000

``scan baseline`` re-implements the approach the issue describes for Quix Streams (written from
that description, not from its code): a dict of key -> last-seen time; ``touch`` takes the lock
and sets the entry; every check takes the lock and scans every key for silence. Our tracker keeps
keys in last-touch order, so a check with nothing due reads only the oldest entry.

For each size it prints: touch cost (ns per call, existing keys), idle check cost (ms per
``check_now()`` with nothing to expire), and the p99 / worst touch latency observed while a
background thread runs checks back to back (how long ``touch`` can be blocked behind a check; the
GIL's 5 ms switch interval and a shared machine add noise to the worst case). Target: idle check
< 0.1 ms at 1M keys.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stream_edge.sinks.core.stream_timeout_tracker import StreamTimeoutTracker  # noqa: E402

HOUR_MS = 3_600_000


class ScanEveryKeyTracker:
    """The baseline: a plain dict, and a full scan under the lock on every check."""

    def __init__(self, stream_timeout_ms: int, on_stream_timeout) -> None:
        self._timeout_ms = stream_timeout_ms
        self._callback = on_stream_timeout
        self._last_seen: dict = {}
        self._lock = threading.Lock()

    def touch(self, key) -> None:
        if key is None:
            return
        with self._lock:
            self._last_seen[key] = time.monotonic() * 1000.0

    def check_now(self) -> int:
        now = time.monotonic() * 1000.0
        expired = []
        with self._lock:
            for key, last in self._last_seen.items():
                if now - last >= self._timeout_ms:
                    expired.append(key)
            for key in expired:
                del self._last_seen[key]
        for key in expired:
            self._callback(key)
        return len(expired)


def make(kind: str):
    if kind == "StreamTimeoutTracker":
        return StreamTimeoutTracker(HOUR_MS, lambda key: None)
    return ScanEveryKeyTracker(HOUR_MS, lambda key: None)


def measure(kind: str, n: int, touches: int, checks: int) -> dict:
    tracker = make(kind)
    keys = [f"sensor-{i:07d}".encode() for i in range(n)]
    for key in keys:
        tracker.touch(key)
    # touch: existing keys in a scattered order (every key moves to the end each time)
    order = [keys[(i * 7919) % n] for i in range(touches)]
    touch = tracker.touch
    start = time.perf_counter()
    for key in order:
        touch(key)
    touch_ns = (time.perf_counter() - start) / touches * 1e9
    # idle check: nothing is due (threshold one hour)
    check = tracker.check_now
    rounds = max(3, checks if kind == "StreamTimeoutTracker" else min(checks, max(3, 2_000_000 // n)))
    start = time.perf_counter()
    for _ in range(rounds):
        check()
    check_ms = (time.perf_counter() - start) / rounds * 1e3
    # worst touch latency while another thread checks back to back
    stop = threading.Event()

    def checker():
        while not stop.is_set():
            check()
            time.sleep(0.001)

    thread = threading.Thread(target=checker, daemon=True)
    thread.start()
    latencies = []
    deadline = time.perf_counter() + 1.0
    i = 0
    clock = time.perf_counter
    while clock() < deadline:
        t0 = clock()
        touch(keys[i % n])
        latencies.append(clock() - t0)
        i += 1
    stop.set()
    thread.join()
    latencies.sort()
    p99 = latencies[int(len(latencies) * 0.99)]
    return {"touch_ns": touch_ns, "check_ms": check_ms, "p99_touch_ms": p99 * 1e3,
            "worst_touch_ms": latencies[-1] * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--touches", type=int, default=500_000)
    parser.add_argument("--checks", type=int, default=10_000)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"cpu count {os.cpu_count()}, load avg {os.getloadavg()[0]:.1f}, "
          f"sys.getswitchinterval() = {sys.getswitchinterval() * 1000:.0f} ms")
    print(f"{'keys':>9}  {'tracker':22} {'touch ns':>9} {'idle check ms':>14} "
          f"{'touch p99 ms':>13} {'touch max ms':>13}   (p99/max: touch while checks run)")
    for n in sizes:
        for kind in ("StreamTimeoutTracker", "scan baseline"):
            r = measure(kind, n, min(args.touches, 10 * n), args.checks)
            print(f"{n:>9,}  {kind:22} {r['touch_ns']:9.0f} {r['check_ms']:14.5f} "
                  f"{r['p99_touch_ms']:13.4f} {r['worst_touch_ms']:13.2f}", flush=True)


if __name__ == "__main__":
    main()

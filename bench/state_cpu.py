"""The stateful per-message paths alone: thread CPU of a tumbling window and a stateful apply, no broker.

Each record goes through the composed executor with its store's transaction looked up as while
processing (two assigned partitions, RocksDB stores, changelogs off); best of 3 rounds.
Run it on two trees to compare a change of the store seam:

    PYTHONPATH=. .venv/bin/python bench/state_cpu.py
    PYTHONPATH=/tmp/before .venv/bin/python bench/state_cpu.py   # an older checkout (git archive)
"""

from __future__ import annotations

import tempfile
import time

from stream_edge import Application

class StandIn:
    """The processing loop's current message, as the store lookup reads it."""

    __slots__ = ("p",)

    def __init__(self, p: int) -> None:
        self.p = p

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return self.p

    def offset(self) -> int:
        return 0


def run(kind: str, n: int = 200_000) -> float:
    """msg/s (thread CPU) of ``kind``: "window" or "stateful"."""
    app = Application(broker_address="127.0.0.1:1", consumer_group="wcpu", loglevel=None,
                      use_changelog_topics=False, state_dir=tempfile.mkdtemp())
    sdf = app.dataframe(app.topic("in", value_deserializer="json"))
    if kind == "window":
        sdf = sdf.apply(lambda v: v["x"]).tumbling_window(1000).mean().final()
    else:
        def count(v, state):  # type: ignore[no-untyped-def]
            n = state.get("n", 0) + 1
            state.set("n", n)
            return n
        sdf = sdf.apply(count, stateful=True)
    out = []
    ex = sdf.compose(sink=lambda v, k, t, h: out.append(1))["in"]
    ctx = app._processing_context
    mgr = ctx.state_manager
    for p in (0, 1):
        mgr.on_partition_assign("in", p, -1001)
    msgs = [StandIn(0), StandIn(1)]
    keys = [f"k{i}".encode() for i in range(1000)]
    best = 0.0
    for _ in range(3):
        t0 = time.thread_time()
        for i in range(n):
            ctx.cursor.message = msgs[i & 1]
            ex({"x": i}, keys[i % 1000], 1000 + i * 5, None)
        dt = time.thread_time() - t0
        best = dt if not best or dt < best else best
        mgr.abort_checkpoint()
    mgr.close()
    return n / best

if __name__ == "__main__":
    for name in ("window", "stateful"):
        print(name, f"{run(name):,.0f} msg/s")

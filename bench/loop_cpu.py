"""The per-message path alone: CPU time of compose + the processing loop, no broker.

Prebuilt ``confluent_kafka.Message`` objects (JSON values, 1,000 keys, 2 partitions) go through the
same pipeline as ``runtime_throughput`` (apply -> filter -> column assignment -> to_topic) with the
producer's ``produce`` replaced by a no-op, so the figure is the framework's own Python cost per
message, repeatable on a busy machine (thread CPU time, best of N rounds). With ``--baseline-tree``
the same measurement runs on an older checkout, alternating rounds, to compare a change.

    ./dev bench loop_cpu
    ./dev bench loop_cpu --baseline-tree /tmp/before     # git worktree add /tmp/before <commit>
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(messages: int, rounds: int) -> float:
    """msg/s of the loop in this process (the stream_edge on sys.path)."""
    import orjson
    from confluent_kafka import Message

    from stream_edge import Application

    class NoBroker:
        def produce(self, *args: object, **kwargs: object) -> None:
            return None

        def poll(self, timeout: float = 0) -> int:
            return 0

    app = Application(broker_address="127.0.0.1:1", consumer_group="loop-cpu", loglevel=None)
    app._producer._producer._inner = NoBroker()  # type: ignore[assignment]  # bench only: no broker
    sdf = app.dataframe(app.topic("in"))
    sdf = sdf.apply(lambda v: {**v, "temp_f": v["temp"] * 1.8 + 32})
    sdf = sdf.filter(lambda v: v["level"] != "debug")
    sdf["hot"] = sdf["temp_f"] > 80
    sdf.to_topic(app.topic("out"))
    msgs = [Message(topic="in", partition=i % 2, offset=i, key=b"k%d" % (i % 1000),
                    value=orjson.dumps({"temp": i % 40, "level": "debug" if i % 10 == 0 else "info", "id": i}),
                    timestamp=(1, 1_700_000_000_000 + i)) for i in range(messages)]
    topics = {t.name: t for t in app._registry.consumer_topics}
    executors = app._registry.compose_all()
    ctx, on_consumer_error, on_processing_error = app.processing_context, app._on_consumer_error, app._on_processing_error
    try:
        from stream_edge.processing.loop import BatchProcessor, build_routes
    except ImportError:  # a checkout from before the single loop (commit 420b6e7 and older)
        from stream_edge.processing import loop as old  # type: ignore[attr-defined]
        handlers = {n: old.build_handler(topics[n], e, ctx, on_consumer_error, on_processing_error)
                    for n, e in executors.items()}
        process = old.build_batch_processor(handlers, on_consumer_error, None, None)
    else:
        process = BatchProcessor(build_routes(topics, executors), ctx, on_consumer_error, on_processing_error)
    best = float("inf")
    for _ in range(rounds):
        started = time.thread_time()
        for i in range(0, messages, 1000):
            process(msgs[i:i + 1000])
        best = min(best, time.thread_time() - started)
    return messages / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7, help="rounds per process; the best counts")
    parser.add_argument("--baseline-tree", metavar="DIR", help="also measure stream_edge imported from DIR")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(f"{measure(args.messages, args.rounds):.0f}")
        return
    trees = [("stream_edge", str(ROOT))] + ([("baseline", args.baseline_tree)] if args.baseline_tree else [])
    figures: dict[str, list[float]] = {name: [] for name, _ in trees}
    for _ in range(2):  # alternate, so a noisy streak hits both
        for name, tree in trees:
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, __file__, "--child", "--messages", str(args.messages),
                                  "--rounds", str(args.rounds)], capture_output=True, text=True, env=env,
                                 cwd="/")
            if out.returncode != 0:
                raise SystemExit(f"{name} ({tree}) failed:\n{out.stderr[-3000:]}")
            figures[name].append(float(out.stdout.strip().splitlines()[-1]))
    for name, tree in trees:
        print(f"{name:12} {max(figures[name]):>10,.0f} msg/s  (CPU only, best of {2 * args.rounds}; {tree})")
    if args.baseline_tree:
        print(f"stream_edge / baseline: {max(figures['stream_edge']) / max(figures['baseline']):.2f}x")


if __name__ == "__main__":
    main()

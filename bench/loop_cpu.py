"""The per-message path alone: CPU time of compose + the processing loop, no broker.

Prebuilt ``confluent_kafka.Message`` objects (the ``runtime_throughput`` bench's JSON values, 10,000
keys, 2 partitions) go through the same pipeline as ``runtime_throughput`` (apply -> filter ->
column assignment -> to_topic, outputs counted as ``run(count=n, collect=False)`` counts them) with
a producer that never connects (``produce`` queues in librdkafka, purged between rounds), so the
figure is the per-message path's CPU cost without a broker, repeatable on a busy machine (thread CPU time, best of N rounds). ``bare`` is the same
work as ``runtime_throughput``'s bare loop (``bench/quix_baseline/pipeline.py``) on the same
messages and producer: the ceiling. With ``--baseline-tree`` the same measurement runs on
an older checkout, alternating rounds, to compare a change.

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
from typing import Any, Callable, List

ROOT = Path(__file__).resolve().parents[1]
LEVELS = ("info", "info", "warn", "info", "debug", "info", "error", "info", "info", "info")


def offline_producer() -> Any:
    """A real confluent-kafka producer that never connects: ``produce`` queues in librdkafka as it
    does with a broker (the call's C cost counts), ``purge()`` empties the queue between rounds."""
    import confluent_kafka

    return confluent_kafka.Producer({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 10, "compression.type": "lz4",
                                     "queue.buffering.max.messages": 2_000_000, "log_level": 0,
                                     "delivery.report.only.error": True})


def messages(n: int) -> List[Any]:
    """``n`` messages shaped as ``runtime_throughput``'s input (``bench/runtime_throughput.py``)."""
    import orjson
    from confluent_kafka import Message

    return [Message(topic="in", partition=i % 2, offset=i // 2, key=b"sensor-%05d" % (i % 10_000),
                    value=orjson.dumps({"sensor": i % 10_000, "seq": i, "ts": 1_700_000_000_000 + i,
                                        "temp": round(15 + (i * 7919 % 2000) / 100, 2),
                                        "hum": round(30 + (i * 104729 % 5000) / 100, 2),
                                        "level": LEVELS[i % len(LEVELS)]}),
                    timestamp=(1, 1_700_000_000_000 + i)) for i in range(n)]


def edge_processor(producer: Any) -> Callable[[list], int]:
    """The edge's batch processor for the bench pipeline (the stream_edge on sys.path)."""
    from stream_edge import Application

    app = Application(broker_address="127.0.0.1:1", consumer_group="loop-cpu", loglevel=None)
    app._producer._producer._inner = producer  # bench only: the client that never connects
    sdf = app.dataframe(app.topic("in", value_deserializer="json"))
    sdf = sdf.apply(lambda v: {**v, "temp_f": round(v["temp"] * 1.8 + 32, 2)})
    sdf = sdf.filter(lambda v: v["level"] != "debug")
    sdf["hot"] = sdf["temp_f"] > 80
    sdf.to_topic(app.topic("out", value_serializer="json"))
    topics = {t.name: t for t in app._registry.consumer_topics}
    ctx, on_consumer_error, on_processing_error = app.processing_context, app._on_consumer_error, app._on_processing_error
    try:  # run(count=n, collect=False): the outputs are counted
        from stream_edge.processing.collector import OutputCollector

        counter = OutputCollector(ctx.cursor, 1 << 62, collect=False, metadata=False)  # never reached
        executors = app._registry.compose_all(sink=counter.sink)
    except (ImportError, TypeError):  # an older checkout
        counter, executors = None, app._registry.compose_all()
    try:
        from stream_edge.processing.loop import BatchProcessor, build_routes
    except ImportError:  # a checkout from before the single loop (commit 420b6e7 and older)
        from stream_edge.processing import loop as old  # type: ignore[attr-defined]
        handlers = {name: old.build_handler(topics[name], e, ctx, on_consumer_error, on_processing_error)
                    for name, e in executors.items()}
        return old.build_batch_processor(handlers, on_consumer_error, None, None)
    return BatchProcessor(build_routes(topics, executors), ctx, on_consumer_error, on_processing_error,
                          counter=counter)


def bare_processor(producer: Any) -> Callable[[list], int]:
    """The bare loop's per-batch body (``bench/quix_baseline/pipeline.py``)."""
    import orjson

    produce, poll, loads, dumps, out = producer.produce, producer.poll, orjson.loads, orjson.dumps, "out"

    def process(msgs: list) -> int:
        for msg in msgs:
            if msg.error() is not None:
                raise SystemExit(f"consume failed: {msg.error()}")
            value = loads(msg.value())
            value = {**value, "temp_f": round(value["temp"] * 1.8 + 32, 2)}
            if value["level"] != "debug":
                value["hot"] = value["temp_f"] > 80
                payload, key, timestamp, headers = dumps(value), msg.key(), msg.timestamp()[1], msg.headers()
                while True:
                    try:
                        produce(out, payload, key, -1, None, None, timestamp, headers)  # positional, as the edge
                        break
                    except BufferError:
                        poll(0.05)
        poll(0)
        return len(msgs)

    return process


def measure(variant: str, n: int, rounds: int) -> float:
    """msg/s (CPU) of ``variant`` ('edge' or 'bare') in this process, best of ``rounds``."""
    import gc

    msgs = messages(n)
    producer = offline_producer()
    process = bare_processor(producer) if variant == "bare" else edge_processor(producer)
    gc.freeze()  # the prebuilt messages are not the loop's garbage (the edge's runner freezes too)
    best = float("inf")
    for _ in range(rounds):
        started = time.thread_time()
        for i in range(0, n, 1000):
            process(msgs[i:i + 1000])
        best = min(best, time.thread_time() - started)
        producer.purge()
        producer.poll(0)
    return n / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=7, help="rounds per process; the best counts")
    parser.add_argument("--baseline-tree", metavar="DIR", help="also measure stream_edge imported from DIR")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare loop")
    parser.add_argument("--child", choices=("edge", "bare"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(f"{measure(args.child, args.messages, args.rounds):.0f}")
        return
    trees = [("stream_edge", "edge", str(ROOT))]
    if args.baseline_tree:
        trees.append(("baseline", "edge", args.baseline_tree))
    if not args.no_bare:
        trees.append(("bare", "bare", str(ROOT)))
    figures: dict[str, list[float]] = {name: [] for name, _, _ in trees}
    for _ in range(2):  # alternate, so a noisy streak hits both
        for name, variant, tree in trees:
            env = dict(os.environ, PYTHONPATH=tree)
            out = subprocess.run([sys.executable, __file__, "--child", variant, "--messages", str(args.messages),
                                  "--rounds", str(args.rounds)], capture_output=True, text=True, env=env,
                                 cwd="/")
            if out.returncode != 0:
                raise SystemExit(f"{name} ({tree}) failed:\n{out.stderr[-3000:]}")
            figures[name].append(float(out.stdout.strip().splitlines()[-1]))
    for name, _, tree in trees:
        best = max(figures[name])
        print(f"{name:12} {best:>10,.0f} msg/s  {1e9 / best:6,.0f} ns/msg  (CPU only, best of {2 * args.rounds}; {tree})")
    if args.baseline_tree:
        print(f"stream_edge / baseline: {max(figures['stream_edge']) / max(figures['baseline']):.3f}x")
    if not args.no_bare:
        print(f"stream_edge / bare: {max(figures['stream_edge']) / max(figures['bare']):.1%} "
              f"(the edge's own cost: {1e9 / max(figures['stream_edge']) - 1e9 / max(figures['bare']):,.0f} ns/msg)")


if __name__ == "__main__":
    main()

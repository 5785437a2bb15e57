"""The benchmark program: one Quix Streams 3.x pipeline, run unchanged on either package.

    python pipeline.py --package stream_edge|quixstreams --broker HOST:PORT --input T --output T \
        --group G --expected N

JSON in -> apply -> filter -> column assignment -> to_topic out. The only difference between the
two runs is which package ``Application`` is imported from. Prints one JSON line with the figures.
Throughput is measured from the first message entering the pipeline until ``run()`` returns after
the expected number of outputs (so the final flush and offset commit are included).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", choices=("stream_edge", "quixstreams", "bare"), required=True)
    parser.add_argument("--broker", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--expected", type=int, required=True, help="number of outputs to wait for")
    parser.add_argument("--messages", type=int, required=True, help="number of input messages")
    parser.add_argument("--profile", help="write a cProfile of run() to this file")
    args = parser.parse_args()

    if args.package == "bare":
        return bare_loop(args)
    if args.package == "stream_edge":  # the project's package, from the repository checkout
        # STREAM_EDGE_TREE: another checkout (before/after comparisons); default: this one
        sys.path.insert(0, os.environ.get("STREAM_EDGE_TREE") or str(Path(__file__).resolve().parents[2]))
    Application = importlib.import_module(args.package).Application

    app = Application(broker_address=args.broker, consumer_group=args.group, auto_offset_reset="earliest",
                      loglevel="WARNING")
    input_topic = app.topic(args.input, value_deserializer="json")
    output_topic = app.topic(args.output, value_serializer="json")

    started: list = []

    def enrich(value: dict) -> dict:
        if not started:
            started.append(time.perf_counter())
        return {**value, "temp_f": round(value["temp"] * 1.8 + 32, 2)}

    sdf = app.dataframe(input_topic)
    sdf = sdf.apply(enrich)
    sdf = sdf.filter(lambda value: value["level"] != "debug")
    sdf["hot"] = sdf["temp_f"] > 80
    sdf.to_topic(output_topic)

    if args.profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    app.run(count=args.expected, timeout=120, collect=False)
    finished = time.perf_counter()
    if args.profile:
        profiler.disable()
        profiler.dump_stats(args.profile)
    elapsed = finished - started[0] if started else float("nan")
    print(json.dumps({"package": args.package, "messages": args.messages, "outputs": args.expected,
                      "seconds": elapsed, "msgs_per_s": args.messages / elapsed}))


def bare_loop(args) -> None:
    """The ceiling: the same work written directly on confluent-kafka + orjson, no framework.

    A careful hand-written loop: ``consume(10000, 1.0)`` batches with the edge's prefetch bounds
    (``queued.max.messages.kbytes=2048``, ``fetch.queue.backoff.ms=10``), orjson both ways, a
    producer with ``linger.ms=10`` and lz4, one ``poll(0)`` per batch and ``poll(0.05)`` only on a
    full queue (``BufferError``), one commit at the end. ``produce`` is called with its positional
    arguments (``topic, value, key, partition, on_delivery, callback, timestamp, headers``), as the
    edge calls it: the keyword form costs confluent-kafka ~0.3 us more per record, which would
    lower the ceiling.
    """
    import orjson
    from confluent_kafka import Consumer, Producer

    consumer = Consumer({"bootstrap.servers": args.broker, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "queued.max.messages.kbytes": 2048, "fetch.queue.backoff.ms": 10})
    producer = Producer({"bootstrap.servers": args.broker, "linger.ms": 10, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})
    consumer.subscribe([args.input])
    produce, poll, loads, dumps, out = producer.produce, producer.poll, orjson.loads, orjson.dumps, args.output
    seen, started = 0, None
    while seen < args.messages:
        msgs = consumer.consume(10_000, 1.0)
        if msgs and started is None:
            started = time.perf_counter()
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
                        produce(out, payload, key, -1, None, None, timestamp, headers)
                        break
                    except BufferError:
                        poll(0.05)
        seen += len(msgs)
        poll(0)
    producer.flush()
    consumer.commit(asynchronous=False)
    consumer.close()
    elapsed = time.perf_counter() - started
    print(json.dumps({"package": "bare", "messages": args.messages, "outputs": args.expected,
                      "seconds": elapsed, "msgs_per_s": args.messages / elapsed}))


if __name__ == "__main__":
    main()

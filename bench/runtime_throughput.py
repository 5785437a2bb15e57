"""Throughput of the same Quix Streams 3.x program on stream_edge and on quixstreams==3.28.1.

    ./dev bench runtime_throughput                 # 1M messages (pre-produced once)
    ./dev bench runtime_throughput --messages 200000
    ./dev bench runtime_throughput --profile /tmp/edge.prof   # cProfile of the stream_edge run
    ./dev bench runtime_throughput --messages 500000 --bare --rounds 3   # + the bare loop, medians of 3
    ./dev bench runtime_throughput --messages 500000 --only stream_edge,bare --rounds 3

Pre-produces N JSON messages (~90 B, 10,000 keys, 2 partitions) once to a topic on the local broker
(reused by later runs), then runs ``bench/quix_baseline/pipeline.py`` once per package as a
subprocess, against the same broker and messages, each with a fresh consumer group and output topic.
Prints messages/s for each and the ratios, and checks every run's output is identical (as multisets
of key and JSON value). ``--bare`` adds the same work written as a hand-made confluent-kafka loop, the
ceiling the edge is measured against; ``--rounds N`` runs the variants N times, alternating, and
reports medians (and each round's edge/bare share: the pair ran back to back). quixstreams lives in its own venv (~/.cache/streaming-lakehouse/venv-quixstreams),
created on first use.
"""

from __future__ import annotations

import argparse
import os
import collections
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from quix_venv import quix_python  # noqa: E402

PIPELINE = ROOT / "bench" / "quix_baseline" / "pipeline.py"
KEYS = 10_000
LEVELS = ("info", "info", "warn", "info", "debug", "info", "error", "info", "info", "info")


def message(i: int, now_ms: int) -> tuple:
    key = f"sensor-{i % KEYS:05d}".encode()
    value = {"sensor": i % KEYS, "seq": i, "ts": now_ms + i, "temp": round(15 + (i * 7919 % 2000) / 100, 2),
             "hum": round(30 + (i * 104729 % 5000) / 100, 2), "level": LEVELS[i % len(LEVELS)]}
    return key, orjson.dumps(value)


def input_topic(bootstrap: str, admin: AdminClient, n: int) -> str:
    """The pre-produced input topic of ``n`` messages (created and filled only once)."""
    name = f"bench-runtime-input-{n}"
    md = admin.list_topics(timeout=10)
    if name in md.topics:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe"})
        total = sum(consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1] for p in (0, 1))
        consumer.close()
        if total == n:
            return name
        admin.delete_topics([name])[name].result(timeout=30)
        time.sleep(2)
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(timeout=30)
    print(f"pre-producing {n} messages to {name} (once)", file=sys.stderr)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})
    now_ms = int(time.time() * 1000)
    sizes = 0
    for i in range(n):
        key, value = message(i, now_ms)
        sizes += len(value)
        while True:
            try:
                producer.produce(name, value, key)
                break
            except BufferError:
                producer.poll(0.5)
    producer.flush()
    print(f"average value size {sizes / n:.0f} B", file=sys.stderr)
    return name


def expected_outputs(n: int) -> int:
    return sum(1 for i in range(n) if LEVELS[i % len(LEVELS)] != "debug")


def read_output(bootstrap: str, topic: str, expected: int) -> collections.Counter:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-read-{uuid.uuid4().hex}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    seen: collections.Counter = collections.Counter()
    count, idle_since = 0, time.monotonic()
    while count < expected and time.monotonic() - idle_since < 15:
        for msg in consumer.consume(10_000, 1.0):
            if msg.error():
                continue
            value = orjson.dumps(orjson.loads(msg.value()), option=orjson.OPT_SORT_KEYS)
            seen[(msg.key(), value)] += 1
            count += 1
            idle_since = time.monotonic()
    consumer.close()
    return seen


def run_variant(python: Path, package: str, bootstrap: str, admin: AdminClient, source: str, n: int,
                expected: int, profile: str | None, program: Path = PIPELINE, label: str = "runtime",
                timeout: float = 1800, tree: str | None = None,
                extra_args: tuple[str, ...] = ()) -> tuple[dict, str]:
    """Run ``program`` (a Quix 3.x program taking --package) once; returns its figures and output topic.

    ``tree``: import ``stream_edge`` from this checkout instead (e.g. a ``git worktree`` of an older
    commit), to measure a change before and after in the same run.
    """
    output = f"bench-{label}-output-{package}-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(output, num_partitions=2, replication_factor=1)])[output].result(timeout=30)
    cmd = [str(python), str(program), "--package", package, "--broker", bootstrap, "--input", source,
           "--output", output, "--group", f"bench-{label}-{package}-{uuid.uuid4().hex[:8]}",
           "--expected", str(expected), "--messages", str(n)]
    if profile:
        cmd += ["--profile", profile]
    cmd += list(extra_args)
    env = dict(os.environ, PYTHONPATH=tree, STREAM_EDGE_TREE=tree) if tree else None
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{package} run failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), output


VARIANTS = ("stream_edge", "quixstreams", "bare")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--only", help="run only these variants (comma-separated: stream_edge,quixstreams,bare)")
    parser.add_argument("--bare", action="store_true",
                        help="also run the same work as a bare confluent-kafka loop (the ceiling)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="run the variants N times, alternating (one of each per round); medians reported")
    parser.add_argument("--profile", help="cProfile output file for the stream_edge run (the last round's)")
    parser.add_argument("--no-check", action="store_true", help="skip the output comparison")
    parser.add_argument("--baseline-tree", metavar="DIR",
                        help="also run stream_edge imported from DIR (e.g. 'git worktree add /tmp/before <commit>') "
                             "to compare a change before/after in one run")
    args = parser.parse_args()
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= set(VARIANTS):
        parser.error(f"--only: unknown variant(s) {sorted(only - set(VARIANTS))}; choose from {VARIANTS}")

    from infra.local import services

    bootstrap = services.up(["kafka"])["KAFKA_BOOTSTRAP"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    source = input_topic(bootstrap, admin, args.messages)
    expected = expected_outputs(args.messages)
    variants = [(name, python) for name, python in
                [("stream_edge", Path(sys.executable)), ("quixstreams", None), ("bare", Path(sys.executable))]
                if (name in only if only else name != "bare" or args.bare)]
    if args.baseline_tree:
        variants.insert(0, ("baseline", Path(sys.executable)))
    runs: dict = {name: [] for name, _ in variants}  # name -> [figures of each round]
    outputs: list = []  # (name, output topic) of every run
    for round_no in range(args.rounds):
        # alternate, and rotate the order each round, so a noisy streak or a warm cache hits all
        order = variants[round_no % len(variants):] + variants[:round_no % len(variants)]
        for name, python in order:
            package = "stream_edge" if name == "baseline" else name
            figures, topic = run_variant(
                python or quix_python(), package, bootstrap, admin, source, args.messages, expected,
                args.profile if name == "stream_edge" and round_no == args.rounds - 1 else None,
                tree=args.baseline_tree if name == "baseline" else None)
            runs[name].append(figures["msgs_per_s"])
            outputs.append((name, topic))
            label = f"stream_edge@{args.baseline_tree}" if name == "baseline" else name
            print(f"round {round_no + 1}: {label:12} {figures['msgs_per_s']:>10,.0f} msg/s  "
                  f"({figures['messages']:,} messages in {figures['seconds']:.2f}s)", flush=True)
    from results import median_spread, save

    medians = {name: median_spread(values) for name, values in runs.items()}
    print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.rounds} round(s):")
    for name, (median, low, high) in medians.items():
        print(f"  {name:12} {median:>10,.0f} msg/s  (low {low:,.0f}, high {high:,.0f})")

    def share(a: str, b: str) -> tuple:
        """Median over the rounds of a/b (each round's pair ran back to back), and each round's."""
        per_round = [x / y for x, y in zip(runs[a], runs[b])]
        return median_spread(per_round)[0], per_round

    extra: dict = {}
    if "baseline" in runs and "stream_edge" in runs:
        change, _ = share("stream_edge", "baseline")
        print(f"stream_edge now / baseline tree: {change:.2f}x (median of the rounds' ratios)")
    if "bare" in runs and "stream_edge" in runs:
        median, per_round = share("stream_edge", "bare")
        extra["stream_edge / bare, % per round"] = [round(100 * r, 1) for r in per_round]
        extra["stream_edge / bare, %, median of the rounds"] = round(100 * median, 1)
        print(f"stream_edge reaches {median:.0%} of the bare confluent-kafka loop (median of {args.rounds} "
              f"rounds: {', '.join(f'{r:.0%}' for r in per_round)})")
    if "stream_edge" in runs and "quixstreams" in runs:
        ratio, _ = share("stream_edge", "quixstreams")
        print(f"ratio stream_edge / quixstreams: {ratio:.2f}x (target >= 2x)")
    if runs and not only and not args.baseline_tree:
        bars = [(f"{args.messages:,} messages", name, *medians[name]) if args.rounds > 1
                else (f"{args.messages:,} messages", name, medians[name][0]) for name in runs]
        save("runtime_throughput", f"apply + filter + to_topic, {args.messages:,} messages", "msg/s", bars,
             runs=args.rounds, goals={"stream_edge / quixstreams": "at least 2x",
                                      "stream_edge / bare": "at least 95%"}, extra=extra or None)
    if not args.no_check and outputs:
        counters = [(name, read_output(bootstrap, topic, expected)) for name, topic in outputs]
        for name, counter in counters:
            total = sum(counter.values())
            if total != expected:
                raise SystemExit(f"{name}: {total} outputs, expected {expected}")
        reference = counters[0][1]
        differing = sorted({name for name, c in counters if c != reference})
        if differing:
            raise SystemExit(f"outputs differ between the runs: {differing} differ from {counters[0][0]}'s")
        print(f"outputs checked: {expected:,} messages in each of {len(counters)} runs, identical "
              f"({', '.join(sorted({n for n, _ in counters}))})")
    for _, topic in outputs:
        admin.delete_topics([topic])


if __name__ == "__main__":
    main()

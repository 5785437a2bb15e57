"""Window throughput: ``tumbling_window(1s).mean().final()`` on stream_edge vs quixstreams==3.28.1.

    ./dev bench windows_throughput                       # 1M messages, 10,000 keys (+ 1k / 100k keys), 3 rounds
    ./dev bench windows_throughput --messages 200000     # quicker, for development
    ./dev bench windows_throughput --keys 10000 --no-scaling --only stream_edge --profile /tmp/w.prof

Pre-produces N JSON messages (~90 B, 2 partitions, round-robin over K keys) once per (N, K) on the
local broker. Event time advances so that each key spans ~10 windows of 1 s (N / (10 K) messages
per key per window, at least 1). Runs
``bench/windows_program.py`` (the same Quix Streams 3.x program) once per package as a subprocess,
each with a fresh consumer group, state directory and output topic, against the same messages.
Prints messages/s, the ratio, peak RSS, whether both outputs are identical (multisets of key and
JSON value, count checked against the pure window engine), and the same at 1,000 and 100,000 keys.
quixstreams runs in its own venv (~/.cache/streaming-lakehouse/venv-quixstreams, created on first
use by the helper shared with bench/runtime_throughput.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import orjson  # noqa: E402
from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402
from runtime_throughput import quix_python, read_output, run_variant  # noqa: E402

from stream_edge.dataframe.windows.aggregations import Mean, Sum  # noqa: E402
from stream_edge.dataframe.windows.count_engine import CountWindowEngine  # noqa: E402
from stream_edge.dataframe.windows.session_engine import SessionWindowEngine  # noqa: E402
from windows_program import COUNT, SESSION_GAP_MS, WINDOWS  # noqa: E402
from stream_edge.dataframe.windows.fixed_engine import FixedWindowEngine  # noqa: E402

PROGRAM = ROOT / "bench" / "windows_program.py"
WINDOWS_PER_KEY = 10


def per_window(n: int, keys: int) -> int:
    """Messages per key per 1 s window, so that every key spans ~10 windows whatever N and K."""
    return max(1, n // (keys * WINDOWS_PER_KEY))


def event(i: int, keys: int, base_ms: int, n: int) -> tuple:
    key = f"sensor-{i % keys:06d}".encode()
    ts = base_ms + (i * 1000) // (per_window(n, keys) * keys)
    value = {"sensor": i % keys, "seq": i, "temp": round(15 + (i * 7919 % 2000) / 100, 2),
             "hum": round(30 + (i * 104729 % 5000) / 100, 2), "unit": "C"}
    return key, value, ts


def base_time(n: int) -> int:
    # a recent, fixed origin (whole days): retention never deletes it and reruns reuse the topic
    return (int(time.time() * 1000) // 86_400_000) * 86_400_000


def input_topic(bootstrap: str, admin: AdminClient, n: int, keys: int) -> tuple[str, int]:
    base = base_time(n)
    name = f"bench-windows-input-v2-{n}-{keys}-{base // 86_400_000}"
    if name in admin.list_topics(timeout=10).topics:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe"})
        total = sum(consumer.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1] for p in (0, 1))
        consumer.close()
        if total == n:
            return name, base
        admin.delete_topics([name])[name].result(timeout=30)
        time.sleep(2)
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(timeout=30)
    print(f"pre-producing {n} messages over {keys} keys to {name} (once)", file=sys.stderr)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 1_000_000})
    for i in range(n):
        key, value, ts = event(i, keys, base, n)
        while True:
            try:
                producer.produce(name, orjson.dumps(value), key, timestamp=ts)
                break
            except BufferError:
                producer.poll(0.5)
    producer.flush()
    return name, base


def window_engine(window: str):
    """The pure engine of ``windows_program.py --window`` (to count the expected outputs)."""
    if window in ("tumbling_mean", "agg3"):
        return FixedWindowEngine(1000, 0, None, Mean())
    if window == "session":
        return SessionWindowEngine(SESSION_GAP_MS, 0, Sum())
    return CountWindowEngine(COUNT, COUNT, Sum())


def expected_outputs(n: int, keys: int, base: int, window: str = "tumbling_mean") -> int:
    """Closed windows, computed by the pure engine (per key, in production order)."""
    engine = window_engine(window)
    states: dict = {}
    closed = 0
    for i in range(n):
        key, value, ts = event(i, keys, base, n)
        ks = states.get(key)
        if ks is None:
            ks = states[key] = engine.new_key_state()
        closed += len(engine.process_final(ks, value["temp"], ts))
    return closed


def compare(bootstrap: str, keys: int, n: int, admin: AdminClient, packages: list, profile: str | None,
            check: bool, baseline_tree: str | None = None, window: str = "tumbling_mean") -> dict:
    source, base = input_topic(bootstrap, admin, n, keys)
    expected = expected_outputs(n, keys, base, window)
    python = {"stream_edge": Path(sys.executable), "baseline": Path(sys.executable)}
    if "quixstreams" in packages:
        python["quixstreams"] = quix_python()
    if baseline_tree:
        packages = ["baseline", *packages]
    figures, outputs = {}, {}
    for package in packages:
        figures[package], outputs[package] = run_variant(
            python[package], "stream_edge" if package == "baseline" else package, bootstrap, admin, source, n,
            expected, profile if package == "stream_edge" else None, program=PROGRAM, label="windows",
            timeout=3600, tree=baseline_tree if package == "baseline" else None, extra_args=("--window", window))
        f = figures[package]
        print(f"  {window:<13} {keys:>7,} keys  {package:<12} {f['msgs_per_s']:>10,.0f} msg/s  {f['seconds']:6.1f} s  "
              f"peak RSS {f['peak_rss_mb']:6.0f} MB", flush=True)
    result = {"window": window, "keys": keys, "messages": n, "expected_outputs": expected,
              **{p: figures[p] for p in packages}}
    if "stream_edge" in figures and "quixstreams" in figures:
        result["ratio"] = figures["stream_edge"]["msgs_per_s"] / figures["quixstreams"]["msgs_per_s"]
        print(f"  {keys:>7,} keys  ratio stream_edge / quixstreams = {result['ratio']:.2f}x", flush=True)
    if "baseline" in figures and "stream_edge" in figures:
        result["vs_baseline"] = figures["stream_edge"]["msgs_per_s"] / figures["baseline"]["msgs_per_s"]
        print(f"  {keys:>7,} keys  stream_edge now / baseline tree = {result['vs_baseline']:.2f}x", flush=True)
    if check:
        seen = {p: read_output(bootstrap, outputs[p], expected) for p in packages}
        counts = {p: sum(s.values()) for p, s in seen.items()}
        same = all(s == seen[packages[0]] for s in seen.values())
        result["outputs"] = counts
        result["identical"] = same and all(c == expected for c in counts.values())
        print(f"  {keys:>7,} keys  outputs {counts} (expected {expected}); identical: {result['identical']}",
              flush=True)
    for topic in outputs.values():
        admin.delete_topics([topic])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000, help="key count of the main comparison")
    parser.add_argument("--scaling", default="1000,100000", help="other key counts to measure")
    parser.add_argument("--no-scaling", action="store_true")
    parser.add_argument("--only", choices=("stream_edge", "quixstreams"))
    parser.add_argument("--profile", help="cProfile the stream_edge run into this file")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--windows", default="tumbling_mean",
                        help=f"comma-separated, of {', '.join(WINDOWS)} (all: every one)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each comparison, the packages' order "
                        "alternating; the figures are medians (low - high)")
    parser.add_argument("--baseline-tree", metavar="DIR",
                        help="also run stream_edge imported from DIR (an older checkout) in the same run")
    args = parser.parse_args()

    from infra.local import services

    bootstrap = services.up()["KAFKA_BOOTSTRAP"]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    packages = [args.only] if args.only else ["stream_edge", "quixstreams"]
    print(f"tumbling_window(1s).mean().final(), {args.messages:,} messages, 2 partitions, broker {bootstrap}")
    kinds = list(WINDOWS) if args.windows == "all" else [w for w in args.windows.split(",") if w]
    unknown = [w for w in kinds if w not in WINDOWS]
    if unknown:
        raise SystemExit(f"unknown window(s) {unknown}; choose from {WINDOWS}")
    cases = [(args.keys, window, True) for window in kinds]
    if not args.no_scaling:
        cases += [(int(k), "tumbling_mean", False) for k in args.scaling.split(",") if k]
    results = []
    for keys, window, main_case in cases:
        rounds = [compare(bootstrap, keys, args.messages, admin, packages if r % 2 == 0 else packages[::-1],
                          args.profile if main_case and r == 0 else None, check=True,
                          baseline_tree=args.baseline_tree if main_case else None, window=window)
                  for r in range(args.rounds)]
        results.append(median_round(rounds))
        if args.rounds > 1:
            r = results[-1]
            print(f"  {window:<13} {keys:>7,} keys  medians of {args.rounds} rounds: "
                  + ", ".join(f"{p} {r[p]['msgs_per_s']:,.0f} msg/s ({r[p]['low']:,.0f} - {r[p]['high']:,.0f})"
                              for p in packages) + (f"; ratio {r['ratio']:.2f}x" if "ratio" in r else ""), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    differing = [f"{r.get('window', 'tumbling_mean')}, {r['keys']:,} keys" for r in results if not r.get("identical", True)]
    if differing:
        raise SystemExit(f"outputs differ ({'; '.join(differing)}): nothing saved")
    if not args.only:
        from results import save

        save("windows_throughput", f"windows with aggregation, {args.messages:,} messages", "msg/s",
             [(f"{r.get('window', 'tumbling_mean')}, {r['keys']:,} keys", p, r[p]["msgs_per_s"], r[p]["low"],
               r[p]["high"]) for r in results for p in ("stream_edge", "quixstreams") if p in r],
             runs=args.rounds)


def median_round(rounds: list) -> dict:
    """One comparison's rounds as one: each package's median msg/s with its low and high, the
    median of the rounds' ratios; outputs identical only if they were in every round.

    >>> a = {"keys": 1, "stream_edge": {"msgs_per_s": 10.0}, "quixstreams": {"msgs_per_s": 2.0}, "ratio": 5.0}
    >>> b = {"keys": 1, "stream_edge": {"msgs_per_s": 12.0}, "quixstreams": {"msgs_per_s": 3.0}, "ratio": 4.0}
    >>> c = {"keys": 1, "stream_edge": {"msgs_per_s": 11.0}, "quixstreams": {"msgs_per_s": 2.5}, "ratio": 4.4}
    >>> m = median_round([a, b, c])
    >>> m["stream_edge"], m["ratio"]
    ({'msgs_per_s': 11.0, 'low': 10.0, 'high': 12.0}, 4.4)
    """
    def median(values: list) -> float:
        ordered = sorted(values)
        return ordered[len(ordered) // 2]

    merged = dict(rounds[len(rounds) // 2])
    for package in ("stream_edge", "quixstreams", "baseline"):
        if package in merged:
            rates = [r[package]["msgs_per_s"] for r in rounds]
            merged[package] = dict(merged[package], msgs_per_s=median(rates), low=min(rates), high=max(rates))
    for ratio in ("ratio", "vs_baseline"):
        if ratio in merged:
            merged[ratio] = median([r[ratio] for r in rounds])
    if "identical" in merged:
        merged["identical"] = all(r["identical"] for r in rounds)
    return merged


if __name__ == "__main__":
    main()

"""edge_soak: the edge's memory over a long backlog, RSS against records consumed.

    ./dev bench edge_soak                          # 10M records; bare, noop, datalake, iceberg
    ./dev bench edge_soak --records 6000000 --pipelines noop,datalake
    ./dev bench edge_soak --tree /tmp/before       # stream_edge imported from another checkout

Produces a backlog of small JSON readings (~95 B, 2 partitions, ``ts_ms`` 2 ms apart: 10M records
span 5.5 hours) to ``edge-soak-<N>`` once (later runs reuse it), then runs each pipeline in its
own process from the earliest offset with a fresh consumer group, at the defaults a user gets:

- ``bare``: a confluent-kafka consumer (librdkafka's defaults) and ``orjson.loads`` per message,
  the floor;
- ``noop``: ``sdf.update(lambda v: None)``, ``app.run(timeout=2)``;
- ``datalake``: ``sdf.sink(DataLakeSink(hive year/month/day/hour from ts_ms))`` to a local folder,
  ``app.run(timeout=2)``;
- ``iceberg``: ``sdf.sink(IcebergSink)`` on the local Iceberg REST catalog, ``app.run(timeout=2)``.

Each process samples its own RSS and ``VmHWM`` (``/proc/self/status``: the kernel's high-water
mark, the true peak however short) every ``--interval`` seconds with the number of records
consumed so far. Prints the peak (``VmHWM``) up to 500k, 1M, 2M, 4M, 6M, ... records
and the goals of docs/operations.md ("Memory sizing"): peak at 6M <= 1.2x peak at 500k; data-lake
sink <= 250 MB; IcebergSink <= 300 MB. Draws RSS against records (``--plot``, default
``docs/img/edge-soak.png``) and saves the peaks of every run (``--no-save``: none), each pipeline
labelled with what it runs and any option given, to ``bench/results/edge_soak.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parents[1]
# EDGE_SOAK_TREE: the pipelines' processes import stream_edge from another checkout (--tree).
sys.path.insert(0, os.environ.get("EDGE_SOAK_TREE") or str(ROOT))

PIPELINES = ("bare", "noop", "datalake", "iceberg")
MARKS = (500_000, 1_000_000, 2_000_000, 4_000_000, 6_000_000, 8_000_000, 10_000_000)
GOALS_MB = {"datalake": 250.0, "iceberg": 300.0}  # peak RSS over a 6M-record backlog
GROWTH_GOAL = 1.2  # peak at 6M / peak at 500k
IDLE_SECONDS = 2.0  # run(timeout=...): the backlog is caught up once nothing came for this long
Sample = Tuple[float, ...]  # (seconds since start, records consumed, RSS MB, VmHWM MB); older files: no VmHWM
LABELS = {"bare": "bare confluent-kafka consumer (the floor)", "noop": "edge, no-op pipeline",
          "datalake": "edge + DataLakeSink (Hive year/month/day/hour)", "iceberg": "edge + IcebergSink (REST catalog)"}


# -- the backlog ----------------------------------------------------------------------------------
def backlog(bootstrap: str, records: int) -> str:
    """The topic holding ``records`` readings on 2 partitions (produced once, reused after)."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    import orjson

    name = f"edge-soak-{records}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    if name in admin.list_topics(timeout=10).topics:
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "edge-soak-probe"})
        total = sum(probe.get_watermark_offsets(TopicPartition(name, p), timeout=10)[1] for p in (0, 1))
        probe.close()
        if total == records:
            return name
        admin.delete_topics([name])[name].result(timeout=30)
        time.sleep(2)
    admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(timeout=30)
    print(f"producing {records:,} records to {name} (once)", file=sys.stderr)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "compression.type": "lz4",
                         "queue.buffering.max.messages": 500_000})
    start_ms = int(time.time() * 1000) - records * 2
    dumps, produce = orjson.dumps, producer.produce
    for i in range(records):
        value = dumps({"sensor": f"s-{i % 5000:04d}", "seq": i, "ts_ms": start_ms + 2 * i,
                       "temp": round(15 + (i * 7919 % 2000) / 100, 2), "hum": round(30 + (i * 104729 % 5000) / 100, 2)})
        while True:
            try:
                produce(name, value, b"s-%04d" % (i % 5000))
                break
            except BufferError:
                producer.poll(0.2)
    producer.flush()
    return name


# -- one pipeline, in its own process ---------------------------------------------------------------
def _rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def _now(started: float, consumed: int) -> Sample:
    return round(time.monotonic() - started, 2), consumed, round(_rss_mb(), 1), round(_rss_mb("VmHWM"), 1)


def _sampled(interval: float, consumed: Callable[[], int]) -> List[Sample]:
    """Start a thread appending ``(seconds, consumed(), RSS MB, VmHWM MB)`` every ``interval`` seconds."""
    samples: List[Sample] = []
    started = time.monotonic()

    def sample() -> None:
        while True:
            samples.append(_now(started, consumed()))
            time.sleep(interval)

    threading.Thread(target=sample, daemon=True, name="rss-sampler").start()
    return samples


def _bare(bootstrap: str, topic: str, records: int, interval: float) -> List[Sample]:
    from confluent_kafka import Consumer
    import orjson

    count = [0]
    samples = _sampled(interval, lambda: count[0])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"edge-soak-bare-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    idle_since, loads = time.monotonic(), orjson.loads
    while count[0] < records and time.monotonic() - idle_since < 30:
        batch = consumer.consume(1000, 1.0)
        for msg in batch:
            value = msg.value()
            if msg.error() is None and value is not None:
                loads(value)
        if batch:
            count[0] += len(batch)
            idle_since = time.monotonic()
    consumer.close()
    samples.append((samples[-1][0], count[0], round(_rss_mb(), 1), round(_rss_mb("VmHWM"), 1)))
    return samples


def _edge(pipeline: str, env: Dict[str, str], topic: str, interval: float,
          sink_options: Dict[str, Any]) -> List[Sample]:
    from stream_edge import Application
    from stream_edge.processing.observer import RunObserver

    class Consumed(RunObserver):
        count = 0

        def on_batch(self, messages, processed: int, seconds: float) -> None:
            self.count += processed

    consumed = Consumed()
    samples = _sampled(interval, lambda: consumed.count)
    app = Application(env["KAFKA_BOOTSTRAP"], consumer_group=f"edge-soak-{pipeline}-{uuid.uuid4().hex[:8]}",
                      auto_offset_reset="earliest", loglevel="WARNING")
    app.add_run_observer(consumed)
    sdf = app.dataframe(app.topic(topic, value_deserializer="json"))
    if pipeline == "noop":
        sdf.update(lambda value: None)
    elif pipeline == "datalake":
        from stream_edge.sinks.core.datalake import DataLakeSink

        lake = Path(tempfile.mkdtemp(prefix="edge-soak-lake-"))
        sdf.sink(DataLakeSink("readings", storage_url=lake.as_uri(), hive_columns=["year", "month", "day", "hour"],
                              timestamp_column="ts_ms", **sink_options))
    else:
        from stream_edge.sinks.community.iceberg import IcebergSink, RESTIcebergConfig

        sdf.sink(IcebergSink(table_name=f"edge_soak.readings_{uuid.uuid4().hex[:8]}",
                             config=RESTIcebergConfig(env["ICEBERG_REST_URI"]), data_catalog_spec="rest",
                             **sink_options))
    app.run(timeout=IDLE_SECONDS)
    samples.append((samples[-1][0], consumed.count, round(_rss_mb(), 1), round(_rss_mb("VmHWM"), 1)))
    return samples


def child(args: argparse.Namespace) -> None:
    env = json.loads(args.env)
    if args.pipeline == "bare":
        samples = _bare(env["KAFKA_BOOTSTRAP"], args.topic, args.records, args.interval)
    else:
        sink_options = {} if args.max_buffer_bytes is None else {"max_buffer_bytes": args.max_buffer_bytes}
        samples = _edge(args.pipeline, env, args.topic, args.interval, sink_options)
    print(json.dumps({"samples": samples}), flush=True)


def run_pipeline(pipeline: str, env: Dict[str, str], topic: str, records: int, interval: float,
                 tree: Optional[str], max_buffer_bytes: Optional[int] = None) -> List[Sample]:
    """Run one pipeline in a fresh process (its RSS is its own) and return its samples."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", pipeline, "--topic", topic,
           "--records", str(records), "--interval", str(interval), "--env", json.dumps(env)]
    if max_buffer_bytes is not None:
        cmd += ["--max-buffer-bytes", str(max_buffer_bytes)]
    child_env = dict(os.environ, EDGE_SOAK_TREE=tree or "")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{pipeline} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return [tuple(s) for s in json.loads(proc.stdout.strip().splitlines()[-1])["samples"]]  # type: ignore[misc]


# -- figures ----------------------------------------------------------------------------------------
def peak_at(samples: List[Sample], mark: int) -> Optional[float]:
    """The peak RSS before ``mark`` records were consumed (None if the run never got there): the
    ``VmHWM`` of the sample that first reached ``mark`` (the kernel's peak so far, a peak between
    samples included), or, for samples without it, the highest RSS sampled until then.

    >>> peak_at([(0, 0, 50.0), (1, 400, 80.0), (2, 900, 70.0), (3, 1000, 90.0)], 500)
    80.0
    >>> peak_at([(0, 0, 50.0, 50.0), (1, 400, 80.0, 95.0), (2, 900, 70.0, 96.0)], 500)
    96.0
    """
    peak = None
    for sample in samples:
        consumed, rss = int(sample[1]), max(sample[2:])
        peak = rss if peak is None else max(peak, rss)
        if consumed >= mark:
            return peak
    return None


def plot(runs: Dict[str, List[Sample]], records: int, output: Path, title: str,
         compare: Optional[Dict[str, List[Sample]]] = None, compare_label: str = "before") -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5))
    colors = {}
    for name, samples in runs.items():
        line, = ax.plot([s[1] / 1e6 for s in samples], [s[2] for s in samples], marker=".", markersize=3, label=name)
        colors[name] = line.get_color()
    for name, samples in (compare or {}).items():  # another run (e.g. before a change), dashed
        ax.plot([s[1] / 1e6 for s in samples], [s[2] for s in samples], linestyle="--", linewidth=1,
                color=colors.get(name), label=f"{name} ({compare_label})")
    for name, goal in GOALS_MB.items():
        if name in runs:
            ax.axhline(goal, linestyle=":", linewidth=1, color="grey")
            ax.annotate(f"{name} goal {goal:.0f} MB", (0, goal), textcoords="offset points", xytext=(4, 3),
                        fontsize=8, color="grey")
    ax.set_xlabel("records consumed (millions)")
    ax.set_ylabel("RSS (MB)")
    ax.set_title(title, fontsize=10)
    ax.set_xlim(0, records / 1e6 * 1.02)
    ax.set_ylim(bottom=0)
    if compare:
        ax.set_yscale("log")  # the bounded runs and a growing one, both readable
        ax.set_ylim(20, max(s[2] for samples in compare.values() for s in samples) * 1.5)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def report(runs: Dict[str, List[Sample]], records: int, suffix: str = "",
           repeats: Optional[Dict[str, List[List[Sample]]]] = None) -> List[tuple]:
    """Print the peaks per mark and the goals; returns the bars for bench/results, each pipeline
    labelled (:data:`LABELS`, plus ``suffix``: the run's options). With ``repeats`` (every run of
    each pipeline), a bar is the median of the runs' peaks with their low and high."""
    marks = [m for m in MARKS if m <= records] or [records]
    print(f"{'peak RSS MB':12}" + "".join(f"{m / 1e6:>8g}M" for m in marks) + f"{'run':>9}{'rec/s':>10}")
    bars: List[tuple] = []
    for name, samples in runs.items():
        every = (repeats or {}).get(name) or [samples]
        peaks = [_median_peak(every, m) for m in marks]
        seconds = samples[-1][0] or 1
        print(f"{name:12}" + "".join(f"{p[0]:>9.0f}" if p is not None else f"{'-':>9}" for p in peaks)
              + f"{max(max(s[2:]) for s in samples):>9.0f}{samples[-1][1] / seconds:>10,.0f}"
              + (f"   (medians of {len(every)} runs)" if len(every) > 1 else ""))
        label = LABELS.get(name, name) + suffix
        bars += [(f"{m / 1e6:g}M", label, *p) if len(every) > 1 else (f"{m / 1e6:g}M", label, p[0])
                 for m, p in zip(marks, peaks) if p is not None]
    for name, samples in runs.items():
        every = (repeats or {}).get(name) or [samples]
        first, at6m = _median_peak(every, 500_000), _median_peak(every, 6_000_000)
        if first is None or at6m is None:
            continue
        verdict = [f"6M/500k {at6m[0] / first[0]:.2f}x "
                   f"({'ok' if at6m[0] <= GROWTH_GOAL * first[0] else 'OVER'} <= {GROWTH_GOAL}x)"]
        if name in GOALS_MB:
            verdict.append(f"{at6m[0]:.0f} MB ({'ok' if at6m[0] <= GOALS_MB[name] else 'OVER'} <= {GOALS_MB[name]:.0f} MB)")
        print(f"goal {name}: " + "; ".join(verdict))
    return bars


def _median_peak(every: List[List[Sample]], mark: int) -> Optional[Tuple[float, float, float]]:
    """(median, low, high) of the runs' peaks before ``mark`` records; None if a run never got there.

    >>> _median_peak([[(0, 0, 50.0), (1, 9, 60.0)], [(0, 0, 40.0), (1, 9, 90.0)], [(0, 9, 70.0)]], 5)
    (70.0, 60.0, 90.0)
    """
    peaks = [peak_at(samples, mark) for samples in every]
    if any(p is None for p in peaks):
        return None
    ordered = sorted(p for p in peaks if p is not None)
    return ordered[len(ordered) // 2], ordered[0], ordered[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--pipelines", default=",".join(PIPELINES), help=f"comma-separated, of {PIPELINES}")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between RSS samples")
    parser.add_argument("--runs", type=int, default=3, help="runs of each pipeline, interleaved; the figures are "
                        "the medians of their peaks (the plot draws the last run)")
    parser.add_argument("--max-buffer-bytes", type=int, help="the sinks' max_buffer_bytes (default: theirs)")
    parser.add_argument("--tree", help="import stream_edge from this checkout (before/after comparisons)")
    parser.add_argument("--plot", default=str(ROOT / "docs" / "img" / "edge-soak.png"))
    parser.add_argument("--samples", help="also write every sample to this JSON file")
    parser.add_argument("--no-save", action="store_true", help="do not write bench/results/edge_soak.json "
                        "(a run the README quotes is always saved)")
    parser.add_argument("--from-samples", metavar="FILE", help="report and draw the samples of an earlier run "
                        "(--samples) instead of running the pipelines")
    parser.add_argument("--compare", metavar="FILE", help="also draw another run's samples, dashed (e.g. --tree's)")
    parser.add_argument("--compare-label", default="before", help="what the --compare run is called in the legend")
    parser.add_argument("--child", choices=PIPELINES, dest="pipeline", help=argparse.SUPPRESS)
    parser.add_argument("--topic", help=argparse.SUPPRESS)
    parser.add_argument("--env", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pipeline:
        return child(args)

    pipelines = [p.strip() for p in args.pipelines.split(",") if p.strip()]
    unknown = sorted(set(pipelines) - set(PIPELINES))
    if unknown:
        raise SystemExit(f"unknown pipelines {unknown}; choose from {PIPELINES}")
    runs: Dict[str, List[Sample]] = {}
    repeats: Dict[str, List[List[Sample]]] = {name: [] for name in pipelines}
    if args.from_samples:
        runs = {name: [tuple(s) for s in samples]  # type: ignore[misc]
                for name, samples in json.loads(Path(args.from_samples).read_text()).items()}
        args.records = max(samples[-1][1] for samples in runs.values())
    else:
        from infra.local import services

        env = services.up(["kafka"] + (["iceberg-rest"] if "iceberg" in pipelines else []))
        env = {k: v for k, v in env.items() if k in ("KAFKA_BOOTSTRAP", "ICEBERG_REST_URI")}
        topic = backlog(env["KAFKA_BOOTSTRAP"], args.records)
        for round_ in range(1, args.runs + 1):
            for name in pipelines:
                print(f"run {round_}/{args.runs}: {name} over {args.records:,} records", file=sys.stderr)
                runs[name] = run_pipeline(name, env, topic, args.records, args.interval, args.tree,
                                          args.max_buffer_bytes)
                if runs[name][-1][1] < args.records:
                    raise SystemExit(f"{name} consumed {runs[name][-1][1]:,} of {args.records:,} records")
                repeats[name].append(runs[name])
    compare = json.loads(Path(args.compare).read_text()) if args.compare else None
    options = "".join([f", max_buffer_bytes={args.max_buffer_bytes}" if args.max_buffer_bytes is not None else "",
                       f", stream_edge from {args.tree}" if args.tree else ""])
    bars = report(runs, args.records, options, repeats)
    if compare:
        print(f"{args.compare_label} ({args.compare}):")
        report(compare, max(samples[-1][1] for samples in compare.values()))
    where = f"stream_edge from {args.tree}" if args.tree else "stream_edge"
    title = f"{where}: RSS over a backlog of {args.records:,} small JSON records (2 partitions), defaults"
    print(f"plot: {plot(runs, args.records, Path(args.plot), title, compare, args.compare_label)}")
    if args.samples and not args.from_samples:
        Path(args.samples).write_text(json.dumps(runs))
    if not args.no_save and not args.from_samples:
        from results import save

        goals = {"growth": f"peak at 6M at most {GROWTH_GOAL}x the peak at 500k",
                 **{name: f"at most {mb:.0f} MB" for name, mb in GOALS_MB.items()}}
        runs_done = min((len(every) for every in repeats.values()), default=1)
        save("edge_soak", f"peak RSS (VmHWM) over a backlog of {args.records:,} records{options}", "MB", bars,
             goals=goals, runs=runs_done)


if __name__ == "__main__":
    main()

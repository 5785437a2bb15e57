"""The window benchmark program: one Quix Streams 3.x pipeline, run unchanged on either package.

    python windows_program.py --package stream_edge|quixstreams --broker HOST:PORT --input T \
        --output T --group G --expected N --messages M

JSON in -> ``apply(temp)`` -> a window (``--window``: ``tumbling_mean`` = ``tumbling_window(1s).mean()``,
``agg3`` = ``tumbling_window(1s).agg(avg=Mean(), lo=Min(), hi=Max())``, ``session`` =
``session_window(50 ms).sum()``, ``count`` = ``tumbling_count_window(10).sum()``) ``.final()`` ->
``to_topic`` out. The only
difference between the runs is the package ``Application`` comes from. Prints one JSON line:
messages/s (first message in -> ``run()`` returned after the expected outputs, final flush and
commit included) and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


WINDOWS = ("tumbling_mean", "agg3", "session", "count")
SESSION_GAP_MS = 50
COUNT = 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", choices=("stream_edge", "quixstreams"), required=True)
    parser.add_argument("--broker", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--expected", type=int, required=True)
    parser.add_argument("--messages", type=int, required=True)
    parser.add_argument("--profile")
    parser.add_argument("--window", choices=WINDOWS, default="tumbling_mean")
    args = parser.parse_args()
    if args.package == "stream_edge":
        # STREAM_EDGE_TREE: another checkout (before/after comparisons); default: this one
        sys.path.insert(0, os.environ.get("STREAM_EDGE_TREE") or str(Path(__file__).resolve().parents[1]))
    Application = importlib.import_module(args.package).Application

    app = Application(broker_address=args.broker, consumer_group=args.group, auto_offset_reset="earliest",
                      loglevel="WARNING", state_dir=tempfile.mkdtemp(prefix="bench-windows-state-"))
    started: list = []

    def temperature(value: dict) -> float:
        if not started:
            started.append(time.perf_counter())
        return value["temp"]

    sdf = app.dataframe(app.topic(args.input, value_deserializer="json"))
    windows = importlib.import_module(f"{args.package}.dataframe.windows")
    sdf = sdf.apply(temperature)
    if args.window == "tumbling_mean":
        sdf = sdf.tumbling_window(1000).mean().final()
    elif args.window == "agg3":
        sdf = sdf.tumbling_window(1000).agg(avg=windows.Mean(), lo=windows.Min(), hi=windows.Max()).final()
    elif args.window == "session":
        sdf = sdf.session_window(SESSION_GAP_MS).sum().final()
    else:
        sdf = sdf.tumbling_count_window(COUNT).sum().final()
    sdf.to_topic(app.topic(args.output, value_serializer="json"))

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
                      "seconds": elapsed, "msgs_per_s": args.messages / elapsed,
                      "peak_rss_mb": peak_rss_mb()}))


def peak_rss_mb() -> float:
    """This process's peak RSS. ``VmHWM`` rather than ``ru_maxrss``: on Linux the latter keeps the
    parent's high-water mark across fork/exec, so the bench driver's memory would show up here."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()

"""The window benchmark program: one Quix Streams 3.x pipeline, run unchanged on either package.

    python windows_program.py --package stream_edge|quixstreams --broker HOST:PORT --input T \
        --output T --group G --expected N --messages M

JSON in -> ``apply(temp)`` -> ``tumbling_window(1s).mean().final()`` -> ``to_topic`` out. The only
difference between the runs is the package ``Application`` comes from. Prints one JSON line:
messages/s (first message in -> ``run()`` returned after the expected outputs, final flush and
commit included) and the process's peak RSS.
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


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
    args = parser.parse_args()
    if args.package == "stream_edge":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    Application = importlib.import_module(args.package).Application

    app = Application(broker_address=args.broker, consumer_group=args.group, auto_offset_reset="earliest",
                      loglevel="WARNING", state_dir=tempfile.mkdtemp(prefix="bench-windows-state-"))
    started: list = []

    def temperature(value: dict) -> float:
        if not started:
            started.append(time.perf_counter())
        return value["temp"]

    sdf = app.dataframe(app.topic(args.input, value_deserializer="json"))
    sdf = sdf.apply(temperature).tumbling_window(1000).mean().final()
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

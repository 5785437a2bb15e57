"""BenchResults: where each benchmark leaves its figures, for ``bench/README.md`` and the picture.

A bench calls :func:`save` at the end of a run; the figures land in ``bench/results/<bench>.json``
(the last run of each bench wins) with when, on which commit and machine, how many runs and by
which command they were measured. ``bench/report.py`` renders the files into one PNG and
``bench/check_readme.py`` checks that every figure ``bench/README.md`` quotes is in them.

Example::

    save("runtime_throughput", "apply + to_topic, 1,000,000 messages", "msg/s",
         [("10k keys", "stream_edge", 133_505.0), ("10k keys", "quixstreams", 63_078.0)],
         runs=3, command="./dev bench runtime_throughput")

A bar may carry its spread over the runs: ``(group, series, median, low, high)``.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]

Bar = Sequence[Any]  # (group, series, value) or (group, series, median, low, high)


def save(bench: str, title: str, unit: str, bars: Iterable[Bar], directory: Path = RESULTS_DIR, *,
         runs: Optional[int] = None, command: Optional[str] = None, goals: Optional[Mapping[str, str]] = None,
         extra: Optional[Mapping[str, Any]] = None) -> Path:
    """Write one run's figures to ``<directory>/<bench>.json``.

    ``bars``: ``(group, series, value)``, or ``(group, series, median, low, high)`` when the value is a
    median of ``runs`` runs; ``command``: what reproduces them (default: this process's command
    line); ``goals``: one stated goal per metric; ``extra``: anything else the README quotes (tables
    of a bench's other modes), kept as given."""
    rows = []
    for bar in bars:
        group, series, value = bar[0], bar[1], bar[2]
        row: dict = {"group": group, "series": series, "value": round(float(value), 1)}
        if len(bar) >= 5:
            row["low"], row["high"] = round(float(bar[3]), 1), round(float(bar[4]), 1)
        rows.append(row)
    if not rows:
        raise ValueError(f"{bench}: no figures to save")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{bench}.json"
    body: dict = {"bench": bench, "title": title, "unit": unit, "bars": rows,
                  "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "commit": git_commit(), "machine": f"{platform.machine()}, {_cores()} cores",
                  "load_average": round(os.getloadavg()[0], 1), "runs": runs or 1,
                  "command": command or _command_line()}
    if goals:
        body["goals"] = dict(goals)
    if extra:
        body["extra"] = dict(extra)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    tmp.replace(path)  # a half-written result is never read
    return path


def load_all(directory: Path = RESULTS_DIR) -> list:
    """Every saved result, by bench name."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def git_commit() -> str:
    """The checkout's short commit (``+`` when bench/, stream_edge/, lakehouse/ or pipelines/ differ
    from it; saved results are the benches' output, not code: a run after another's unsaved result
    is still of this commit), or ``unknown`` outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "bench", "stream_edge", "lakehouse",
                                "pipelines", ":(exclude)bench/results"], cwd=ROOT, capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+" if dirty else "")


def median_spread(values: Sequence[float]) -> tuple:
    """``(median, low, high)`` of one metric's runs.

    >>> median_spread([3.0, 1.0, 2.0, 10.0])
    (2.5, 1.0, 10.0)
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no runs")
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return median, ordered[0], ordered[-1]


def _command_line() -> str:
    script = Path(sys.argv[0]).name.removesuffix(".py") if sys.argv and sys.argv[0] else "?"
    return " ".join(["./dev bench", script] + [shlex.quote(a) for a in sys.argv[1:]])


def _cores() -> int:
    return os.cpu_count() or 1

"""BenchResults: where each benchmark leaves its figures, for ``./dev bench report``.

A bench calls :func:`save` at the end of a run; the figures land in ``bench/results/<bench>.json``
(the last run of each bench wins) and ``bench/report.py`` renders every file into one PNG.

Example::

    save("runtime_throughput", "apply + to_topic, 1,000,000 messages", "msg/s",
         [("10k keys", "stream_edge", 133_505.0), ("10k keys", "quixstreams", 63_078.0)])
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Iterable, Tuple

RESULTS_DIR = Path(__file__).resolve().parent / "results"

Bar = Tuple[str, str, float]  # (group, series, value)


def save(bench: str, title: str, unit: str, bars: Iterable[Bar], directory: Path = RESULTS_DIR) -> Path:
    """Write one run's figures (``(group, series, value)`` bars) to ``<directory>/<bench>.json``."""
    rows = [{"group": g, "series": s, "value": round(float(v), 1)} for g, s, v in bars]
    if not rows:
        raise ValueError(f"{bench}: no figures to save")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{bench}.json"
    body = {"bench": bench, "title": title, "unit": unit, "bars": rows,
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "machine": f"{platform.machine()}, {_cores()} cores"}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(body, indent=2) + "\n")
    tmp.replace(path)  # a half-written result is never read
    return path


def load_all(directory: Path = RESULTS_DIR) -> list:
    """Every saved result, by bench name."""
    return [json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))]


def _cores() -> int:
    import os

    return os.cpu_count() or 1

"""The edge as users install it: a virtual environment with only the edge's extras' packages
(``edge``, and ``edge-iceberg`` for the ``IcebergSink`` contender).

The project's development venv also holds the lakehouse side (pyspark, pandas, great-expectations),
and pyarrow imports pandas whenever pandas is importable: in the ``lake_ingest`` shape that costs
the edge ~40 MB of RSS and ~0.25 CPU s that a deployment (``pip install .[edge]``, the Docker
image, the systemd unit) never pays. The edge contenders of ``bench/lake_ingest.py`` therefore run
on this interpreter, with the checkout's ``stream_edge`` on their ``sys.path``
(``--edge-python dev`` runs them on the development venv instead).

Created once under ``~/.cache/streaming-lakehouse/venv-edge`` (``$XDG_CACHE_HOME`` respected)
with the versions ``pyproject.toml`` pins for the ``edge`` extra; re-created when the pins change.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from quix_venv import CACHE, under_cache_lock

ROOT = Path(__file__).resolve().parents[1]
EDGE_VENV = CACHE / "venv-edge"


EXTRAS = ("edge", "edge-iceberg")


def edge_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The :data:`EXTRAS`' requirements as ``pyproject.toml`` lists them (pinned), deduplicated."""
    text = pyproject.read_text()
    found: list[str] = []
    for extra in EXTRAS:
        block = re.search(rf"^{re.escape(extra)} = \[(.*?)\]$", text, re.S | re.M)
        if block is None:
            raise RuntimeError(f"{pyproject} has no {extra!r} optional dependency list")
        found += [req for req in re.findall(r'"([^"]+)"', block.group(1)) if req not in found]
    return found


def edge_python() -> Path:
    """This venv's python, created or refreshed on first use (parallel callers take turns on a lock)."""
    return under_cache_lock("venv-edge.lock", _ensure)


def _ensure() -> Path:
    python = EDGE_VENV / "bin" / "python"
    wanted = sorted(edge_requirements())
    stamp = EDGE_VENV / "requirements.txt"
    if python.exists() and stamp.exists() and stamp.read_text().split("\n") == wanted:
        return python
    print(f"creating {EDGE_VENV} with the edge extra's packages only (once)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(EDGE_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *wanted],
                   check=True)
    stamp.write_text("\n".join(wanted))
    return python


if __name__ == "__main__":
    print(edge_python())

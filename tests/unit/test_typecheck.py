"""mypy over the edge and the Spark-side library: the typed seams stay typed.

Configuration in pyproject.toml ([tool.mypy]). Run alone: ``.venv/bin/mypy stream_edge lakehouse``.
"""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_error():
    proc = subprocess.run([sys.executable, "-m", "mypy", "stream_edge", "lakehouse"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"mypy found errors:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"

"""The README's first command works: the demo runs the whole pipeline and checks its own result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.e2e
def test_demo_runs_kafka_to_windows_and_sql_end_to_end(tmp_path, services_env) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.demo", "--records", "400", "--dir", str(tmp_path / "demo"),
         "--keep-services"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    out = result.stdout
    assert result.returncode == 0, (out + result.stderr)[-5000:]
    assert "the edge committed 400 records" in out
    assert "'stream': 'sensor-d', 'event': 'stream_timeout'" in out
    assert "rows 0 -> 400" in out  # register
    assert "rows 400 -> 400" in out  # compact keeps every row
    # The per-sensor query: the silent sensor has only its first-half readings.
    tables = [[cell.strip() for cell in line.split("|")] for line in out.splitlines() if line.startswith(" sensor-")]
    rows = {cells[0]: int(cells[1]) for cells in tables if len(cells) == 5}
    assert rows == {"sensor-a": 117, "sensor-b": 117, "sensor-c": 116, "sensor-d": 50}
    # The windows job: closed 1-minute windows per sensor (~13 min of readings; sensor-d stopped halfway).
    assert "windows lake.demo.sensor_readings -> lake.demo.temperature_1m: tumbling 60000 ms" in out
    minutes = {cells[0]: (int(cells[1]), float(cells[2]), float(cells[3])) for cells in tables if len(cells) == 4}
    assert set(minutes) == set(rows)
    assert all(n >= 5 and coolest <= warmest for n, coolest, warmest in minutes.values())
    assert minutes["sensor-d"][0] < minutes["sensor-a"][0]
    # The validate job: every expectation of the example spec holds, Data Docs were written.
    assert "validate lake.demo.sensor_readings" in out
    assert "FAILED" not in out
    assert (tmp_path / "demo" / "data-docs" / "index.html").is_file()

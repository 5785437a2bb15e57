"""The README's first command works: the demo runs the whole pipeline, and its report adds up
against the lake and against what the feed sent."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from pipelines.demo_feed import DemoFeed
from pipelines.demo_screen import JVM_NOTICE

REPO = Path(__file__).resolve().parents[2]
RECORDS = 2000  # enough traffic for late records (delivered ~75 s behind) in both phases


@pytest.mark.e2e
def test_demo_report_accounts_for_every_record(tmp_path, services_env) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pipelines.demo", "--records", str(RECORDS), "--dir", str(tmp_path / "demo"),
         "--keep-services"],
        cwd=REPO, capture_output=True, text=True, timeout=900,
    )
    out = result.stdout
    # On failure: the demo's own verdict, and the first lines of any exception (a Java trace can
    # bury the head of stderr), then the tail of the output.
    causes = [line for line in result.stderr.splitlines()
              if ("Exception" in line or "Error" in line or "FAILED" in line) and not line.lstrip().startswith("at ")]
    assert result.returncode == 0, "\n".join(causes[:15]) + "\n...\n" + (out + result.stderr)[-4000:]
    # The feed is seeded: the same counts the demo sent (timestamps aside).
    feed = DemoFeed(records=RECORDS, start_ms=0, seed=1)
    assert_nothing_alarming(out + result.stderr, feed)
    assert feed.malformed > 0 and feed.late > 0 and len(feed.silent_sensors) == 3
    report = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip()
              for line in out.split("[demo] report", 1)[1].splitlines()[1:8]}
    assert report["records in"].startswith(f"{RECORDS:,} ({feed.valid:,} valid, {feed.malformed} malformed")
    # Every valid record is in the lake, once; the malformed ones are not, they are quarantined.
    lake = ds.dataset(str(tmp_path / "demo" / "lake" / "data-lake" / "time-series" / "sensor_readings"),
                      format="parquet", partitioning="hive", exclude_invalid_files=True,
                      ignore_prefixes=["_", "."]).to_table(columns=["sensor", "ts_ms", "seq", "_kafka_offset"])
    assert lake.num_rows == feed.valid
    assert report["rows in the lake"].startswith(f"{feed.valid:,} ")
    keys = set(zip(lake.column("sensor").to_pylist(), lake.column("ts_ms").to_pylist()))
    assert len(keys) == feed.valid and None not in lake.column("sensor").to_pylist()
    assert report["quarantined"].startswith(f"{feed.malformed} on the quarantine topic")
    kinds = dict((name, int(n)) for n, name in re.findall(r"(\d+) x ([A-Za-z_ ]+)", report["quarantined"]))
    assert sum(kinds.values()) == feed.malformed
    assert set(kinds) <= {"invalid JSON", "not an object", "missing ts_ms", "bad temperature", "missing sensor"}
    # Keyed state: each sensor's sequence numbers run 1..n without a gap.
    per_sensor: dict = {}
    for sensor, seq in zip(lake.column("sensor").to_pylist(), lake.column("seq").to_pylist()):
        per_sensor.setdefault(sensor, []).append(seq)
    assert all(sorted(seqs) == list(range(1, len(seqs) + 1)) for seqs in per_sensor.values())
    # Each sensor that went silent is reported exactly once.
    assert report["silent sensors"] == ", ".join(f"{s} (x1)" for s in feed.silent_sensors)
    edge_windows, batch_windows = map(int, re.findall(r"(\d+) (?:closed|recomputed)", report["windows"]))
    assert edge_windows > 0 and batch_windows >= edge_windows
    passed, total = map(int, re.search(r"(\d+)/(\d+) passed", report["expectations"]).groups())
    assert passed == total > 0
    assert (tmp_path / "demo" / "data-docs" / "index.html").is_file()
    assert "Using an existing Spark session" not in out + result.stderr


def assert_nothing_alarming(screen: str, feed: DemoFeed) -> None:
    """A successful run's screen: no ERROR line and no stack trace (the validate step once printed
    a Spark listener's), no JVM boot notice about Spark's incubator module, and the window's late
    readings as one summary line with its count, not a warning per record."""
    alarming = [line for line in screen.splitlines()
                if re.search(r"\bERROR\b|Traceback|^\s+at [\w.$]+\(", line)]
    assert alarming == [], "\n".join(alarming[:10])
    assert "Using incubator modules" not in screen, f"the JVM's boot notice ({JVM_NOTICE}) is on the screen"
    assert "Skipping window processing" not in screen
    late = re.findall(r"\[demo\] edge: (\d+) late readings dropped by the 1-minute window, in \d+ windows", screen)
    assert len(late) == 1 and 0 < int(late[0]) <= feed.late, late  # the malformed late ones are quarantined
    assert f"grace 5 s; {late[0]} late readings dropped)" in screen

"""Helpers of the lakehouse job tests: edge lakes written by the real DataLakeSink, target tables
in the three places a table can live (Iceberg via the REST server, Iceberg in the embedded
catalog, Delta), and a runner for the jobs as separate driver processes (crash tests).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


from stream_edge.sinks.core.datalake import DataLakeSink

REPO = Path(__file__).resolve().parents[3]
HOUR_MS = 3_600_000
BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TABLE_KINDS = ("rest", "embedded", "delta")


def sensor_records(n: int, start: int = 0, hours: int = 2, sensors=("s-1", "s/2")) -> list[dict]:
    """Deterministic sensor readings spread over ``hours`` hours and ``sensors`` (hostile '/')."""
    return [{"ts_ms": BASE_TS + (i % hours) * HOUR_MS + i, "sensor": sensors[(i // hours) % len(sensors)],
             "value": round(i * 0.5, 1), "seq": i} for i in range(start, start + n)]


class EdgeLake:
    """An edge table written by the real ``DataLakeSink`` (add + flush = one commit)."""

    def __init__(self, base: Path, hive_columns=("year", "month", "day", "hour", "sensor"),
                 table_name: str = "sensor_readings") -> None:
        self.base = base
        self.sink = DataLakeSink(table_name, storage_url=base.as_uri(), s3_prefix="time-series",
                                 hive_columns=list(hive_columns), timestamp_column="ts_ms")
        self.sink.setup()
        self.root = base / "time-series" / table_name
        self.topic = "sensors"
        self._next_offset: dict[int, int] = {}
        self.records: list[dict] = []

    @property
    def uri(self) -> str:
        return self.root.as_uri()

    def write(self, records: list[dict], partition: int = 0) -> None:
        """One checkpoint's worth of records on one Kafka partition: one commit."""
        offset = self._next_offset.get(partition, 0)
        for record in records:
            self.sink.add(record, record.get("sensor"), record["ts_ms"], [], self.topic, partition, offset)
            offset += 1
        self.sink.flush(self.topic, partition)
        self._next_offset[partition] = offset
        self.records.extend(records)

    def data_files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*.parquet")
                      if not any(part.startswith("_") and "=" not in part
                                 for part in p.relative_to(self.root).parts))


@dataclass
class TargetTable:
    kind: str           # rest | embedded | delta
    table_format: str   # iceberg | delta
    name: str           # what --table takes
    env: dict           # environment that makes a separate driver see the same catalog

    def sql_name(self) -> str:
        if self.kind == "delta":
            db, t = self.name.split(".")
            return f"spark_catalog.`{db}`.`{t}`"
        return ".".join(f"`{p}`" for p in self.name.split("."))



def run_job(args: list[str], env: dict, pause_at: str | None = None, kill_after: tuple[str, float] | None = None,
            timeout: float = 300.0):
    """Run ``python -m pipelines.cli <args>`` as its own driver process.

    ``pause_at``: the job stops at that fault-injection point and is killed there.
    ``kill_after=(text, seconds)``: killed ``seconds`` after a stderr line containing ``text``
    (e.g. while Spark is rewriting files). A kill is SIGKILL to the whole driver (Python and its
    JVM): a crash, not a shutdown. Returns (returncode, stdout, stderr).
    """
    full_env = dict(os.environ, **env, PYTHONUNBUFFERED="1", TZ="UTC")
    if pause_at:
        full_env["LAKEHOUSE_PAUSE_AT"] = pause_at
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", *args], cwd=REPO, env=full_env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    if not pause_at and not kill_after:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    trigger = f"LAKEHOUSE_PAUSED {pause_at}" if pause_at else kill_after[0]  # type: ignore[index]
    delay = 0.0 if pause_at else kill_after[1]  # type: ignore[index]
    seen: list[str] = []
    killed = False
    try:
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if trigger in line:
                time.sleep(delay)
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
                break
    finally:
        if proc.poll() is None and not killed:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert killed, f"the job never printed {trigger!r}; stderr:\n{''.join(seen)[-4000:]}"
    return proc.returncode, "", "".join(seen)

"""The deployment files are valid: the systemd unit passes systemd-analyze, the Dockerfile only
copies what exists and runs the real entry point, and the example configuration parses."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipelines.edge_service import EdgeConfig

REPO = Path(__file__).resolve().parents[3]
UNIT = REPO / "infra" / "systemd" / "stream-edge@.service"
ENV_EXAMPLE = REPO / "infra" / "systemd" / "stream-edge.env.example"
DOCKERFILE = REPO / "infra" / "docker" / "Dockerfile"


def _render_unit(tmp_path: Path, text: str) -> Path:
    """The unit with its install paths pointed at this checkout, so ExecStart really exists."""
    rendered = (text.replace("/opt/streaming-lakehouse/.venv/bin/python", sys.executable)
                    .replace("/opt/streaming-lakehouse/.venv/bin/stream-edge",
                             str(Path(sys.executable).with_name("stream-edge")))
                    .replace("/opt/streaming-lakehouse", str(REPO))
                    .replace("/etc/stream-edge/edge.env", str(ENV_EXAMPLE)))
    path = tmp_path / "stream-edge@.service"
    path.write_text(rendered)
    return path


def _verify(unit_dir: Path, instance: str) -> subprocess.CompletedProcess:
    assert shutil.which("systemd-analyze"), "systemd-analyze is required (Debian package systemd)"
    return subprocess.run(["systemd-analyze", "verify", f"./{instance}"], cwd=unit_dir,
                          capture_output=True, text=True, timeout=60)


def test_systemd_unit_verifies_clean(tmp_path) -> None:
    _render_unit(tmp_path, UNIT.read_text())
    result = _verify(tmp_path, "stream-edge@1.service")
    assert result.returncode == 0, result.stderr
    assert "Unknown key" not in result.stderr and "fatal" not in result.stderr, result.stderr


def test_systemd_verify_catches_a_broken_unit(tmp_path) -> None:
    _render_unit(tmp_path, UNIT.read_text().replace("ExecStart=", "ExecStart=not-a-path"))
    result = _verify(tmp_path, "stream-edge@1.service")
    assert result.returncode != 0
    assert "ExecStart" in result.stderr or "executable" in result.stderr


def test_unit_runs_the_data_lake_pipeline_through_stream_edge() -> None:
    exec_start = re.search(r"^ExecStart=(.*)$", UNIT.read_text(), re.M).group(1)
    assert exec_start.endswith("/bin/stream-edge run pipelines.edge_service:pipeline")
    from pipelines.edge_service import pipeline

    assert callable(pipeline)


def test_dockerfile_copies_only_existing_paths_and_runs_the_service() -> None:
    text = DOCKERFILE.read_text()
    copies = re.findall(r"^COPY\s+(.+)$", text, re.M)
    assert copies
    for line in copies:
        *sources, _dest = line.split()
        for src in sources:
            assert (REPO / src).exists(), f"Dockerfile copies missing path {src}"
    assert 'ENTRYPOINT ["stream-edge", "run", "pipelines.edge_service:pipeline"]' in text
    assert 'pip install ".[edge]"' in text  # the light extra: no Spark in the edge image


def test_example_environment_parses_into_a_valid_config() -> None:
    env = dict(line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines()
               if line and not line.startswith("#"))
    config = EdgeConfig.from_env(env)
    assert config.broker_address == "broker-1:9092,broker-2:9092"
    assert config.hive_columns == ("year", "month", "day", "hour")
    assert config.stream_timeout_ms == 60000
    assert config.storage_url == "s3://my-lake-bucket"

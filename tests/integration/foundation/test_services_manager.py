"""The local services manager: idempotent start, one broker only, clean stop, clear errors.

Runs a private set of services in a temp state dir so the shared ones are not disturbed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from infra.local import services

REPO = Path(__file__).resolve().parents[3]


def _cli(local_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, STREAMLAKE_LOCAL_DIR=str(local_dir))
    return subprocess.run([sys.executable, "-m", "infra.local.services", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=180)


def _marked_pids(local_dir: Path) -> set[int]:
    """Every process on the machine that carries this state dir's service marker."""
    pids = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"@{local_dir}".encode() in (proc / "environ").read_bytes():
                state = (proc / "stat").read_text().split(")")[-1].split()[0]
                if state != "Z":
                    pids.add(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.integration
def test_up_twice_starts_one_broker_and_down_leaves_nothing(tmp_path) -> None:
    local = tmp_path / "svc"
    first = _cli(local, "up", "kafka", "s3")
    assert first.returncode == 0, first.stderr
    assert "started kafka,s3" in first.stdout
    pid_before = int((local / "kafka" / "pid").read_text())

    second = _cli(local, "up", "kafka", "s3")
    assert second.returncode == 0, second.stderr
    assert "already running" in second.stdout
    assert int((local / "kafka" / "pid").read_text()) == pid_before
    java_brokers = [p for p in _marked_pids(local) if "kafka.Kafka" in Path(f"/proc/{p}/cmdline").read_text()]
    assert java_brokers == [pid_before]

    env = dict(line.split("=", 1) for line in (local / "services.env").read_text().splitlines())
    assert env["KAFKA_BOOTSTRAP"].startswith("127.0.0.1:")
    assert env["S3_ENDPOINT"].startswith("http://127.0.0.1:")

    status = _cli(local, "status")
    assert "kafka" in status.stdout and "ready" in status.stdout

    down = _cli(local, "down")
    assert down.returncode == 0 and "kafka" in down.stdout
    assert _marked_pids(local) == set()
    assert (local / "services.env").read_text() == ""


def test_unknown_service_is_a_clear_error(tmp_path) -> None:
    result = _cli(tmp_path, "up", "zookeeper")
    assert result.returncode == 1
    assert "unknown service(s) ['zookeeper']" in result.stderr


def test_missing_jars_name_the_fetch_command(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMLAKE_JAR_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("STREAMLAKE_LOCAL_DIR", str(tmp_path / "svc"))
    with pytest.raises(services.ServiceError, match=r"infra/jars/fetch.sh kafka"):
        services.up(["kafka"])

"""``stream-edge run app.py`` with settings a script's own Application decides (its guarantee,
dead-letter topic, commit interval, offset reset): through the real command, a flag or a config
file entry is refused before the script runs, naming the flag and why; the environment only warns
(the script may read it itself)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

COMMAND = str(Path(sys.executable).with_name("stream-edge"))


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(
        "import pathlib\n"
        "from stream_edge import Application\n"
        "app = Application()  # its own guarantee, dead-letter topic... (the defaults)\n"
        "app.dataframe(app.topic('readings')).to_topic(app.topic('out'))\n"
        f"pathlib.Path({str(tmp_path / 'ran')!r}).write_text('ran')  # instead of app.run(): no broker here\n")
    return path


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([COMMAND, "run", *args, "--set", "broker_address=127.0.0.1:1"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("flag, name, source", [
    (["--dead-letter-topic", "edge-dlq"], "dead_letter_topic", "flag --dead-letter-topic"),
    (["--set", "processing_guarantee=exactly-once"], "processing_guarantee", "flag --set processing_guarantee"),
])
def test_a_flag_a_script_target_cannot_apply_is_refused_before_the_script_runs(script, flag, name, source):
    done = run(str(script), *flag)
    assert done.returncode == 2, done.stderr
    assert f"{source} sets {name}, which a script target does not apply" in done.stderr
    assert "builds its own Application" in done.stderr and f"pass {name}=... to Application(...)" in done.stderr
    assert not (script.parent / "ran").exists()


def test_a_config_file_entry_is_refused_and_the_environment_only_warns(script, tmp_path):
    config = tmp_path / "edge.toml"
    config.write_text("commit_interval = 2\n")
    done = run(str(script), "--config", str(config))
    assert done.returncode == 2 and f"config file {config} sets commit_interval" in done.stderr
    assert not (tmp_path / "ran").exists()
    done = run(str(script), env={"STREAM_EDGE_PROCESSING_GUARANTEE": "exactly-once"})
    assert done.returncode == 0, done.stderr
    assert "environment STREAM_EDGE_PROCESSING_GUARANTEE sets processing_guarantee, which a script target " \
           "does not apply" in done.stderr and "ignored" in done.stderr
    assert (tmp_path / "ran").read_text() == "ran"

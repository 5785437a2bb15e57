"""stream-edge settings: precedence environment < config file < flags, errors naming the source."""

import subprocess
import sys
from pathlib import Path

import pytest

from stream_edge.service.settings import ServiceSettings, SettingsError


def test_flags_beat_the_config_file_which_beats_the_environment(tmp_path):
    config = tmp_path / "edge.toml"
    config.write_text('consumer_group = "from-file"\ncommit_interval = 3\n')
    env = {"Quix__Broker__Address": "k:9092", "STREAM_EDGE_CONSUMER_GROUP": "from-env",
           "STREAM_EDGE_COMMIT_INTERVAL": "9", "Quix__State__Dir": "/var/lib/edge"}
    settings = ServiceSettings.resolve(env, str(config), {"commit_interval": "1.5"})
    assert settings.consumer_group == "from-file" and settings.source("consumer_group") == f"config file {config}"
    assert settings.commit_interval == 1.5 and settings.source("commit_interval") == "flag --set commit_interval"
    assert settings.state_dir == "/var/lib/edge" and settings.source("state_dir") == "environment Quix__State__Dir"
    assert settings.processing_guarantee == "at-least-once" and settings.source("processing_guarantee") == "default"


def test_errors_name_the_setting_and_where_it_came_from(tmp_path):
    with pytest.raises(SettingsError, match="broker_address is required"):
        ServiceSettings.resolve({})
    with pytest.raises(SettingsError, match=r"processing_guarantee='twice' \(from environment STREAM_EDGE_PROC"):
        ServiceSettings.resolve({"Quix__Broker__Address": "k", "STREAM_EDGE_PROCESSING_GUARANTEE": "twice"})
    with pytest.raises(SettingsError, match="unknown setting 'colour'"):
        ServiceSettings.resolve({"Quix__Broker__Address": "k"}, flags={"colour": "red"})
    bad = tmp_path / "bad.toml"
    bad.write_text("linger_ms = 5\n")
    with pytest.raises(SettingsError, match=r"unknown setting\(s\) \['linger_ms'\]"):
        ServiceSettings.resolve({"Quix__Broker__Address": "k"}, str(bad))


def test_check_defines_a_quix_style_script_without_connecting(tmp_path):
    script = tmp_path / "app.py"
    script.write_text(
        "from stream_edge import Application\n"
        "app = Application()  # broker, group and state dir come from the command's settings\n"
        "sdf = app.dataframe(app.topic('readings'))\n"
        "sdf.apply(lambda v: v).to_topic(app.topic('out'))\n"
        "app.run()\n")
    command = str(Path(sys.executable).with_name("stream-edge"))
    done = subprocess.run([command, "check", str(script), "--set", "broker_address=127.0.0.1:1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "input topics ['readings']" in done.stdout and "flag --set broker_address" in done.stdout

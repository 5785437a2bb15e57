"""One resolver from settings to ApplicationConfig, one consumer-group default, every field wired,
and the stream-edge command's hooks without process-wide mutable state (no broker needed)."""

import dataclasses
import os

import pytest

from stream_edge import Application
from stream_edge.app_config import DEFAULT_CONSUMER_GROUP, resolve_config, transactional_id
from stream_edge.kafka.consumer import Consumer
from stream_edge.processing.observer import ProcessHooks, RunObserver, installed_hooks, process_hooks
from stream_edge.service import cli
from stream_edge.service.settings import ServiceSettings

QUIX_ENV = ("Quix__Broker__Address", "Quix__Consumer__Group", "Quix__Consumer_Group", "Quix__State__Dir",
            "Quix__Sdk__Token")


@pytest.fixture()
def clean_env(monkeypatch):
    for name in QUIX_ENV:
        monkeypatch.delenv(name, raising=False)


def test_an_argument_beats_the_service_which_beats_the_environment_which_beats_the_default():
    env = {"Quix__Broker__Address": "env:9092", "Quix__Consumer_Group": "env-group", "Quix__State__Dir": "/env"}
    service = {"broker_address": "svc:9092", "consumer_group": "svc-group", "state_dir": "/svc"}
    given = {"broker_address": "arg:9092", "consumer_group": "arg-group", "state_dir": "/arg"}
    unset = dict.fromkeys(given)

    def picked(arguments, env, service):
        cfg = resolve_config(arguments, env, service)
        return cfg.broker_address.bootstrap_servers, cfg.consumer_group, str(cfg.state_dir)

    assert picked(given, env, service) == ("arg:9092", "arg-group", "/arg")
    assert picked(unset, env, service) == ("svc:9092", "svc-group", "/svc")
    assert picked(unset, env, {}) == ("env:9092", "env-group", "/env")
    assert picked({"broker_address": "b:1"}, {}, None) == ("b:1", DEFAULT_CONSUMER_GROUP, "state")
    with pytest.raises(ValueError, match=r"Either \"broker_address\" or \"quix_sdk_token\" must be provided"):
        resolve_config(unset, {}, {})
    with pytest.raises(ValueError, match="max_partition_buffer_size must be > 0, got 0"):
        resolve_config({"broker_address": "b:1", "max_partition_buffer_size": 0}, {}, {})


def test_one_consumer_group_default_for_the_application_the_service_and_a_bare_consumer(clean_env):
    assert Application("b:9092", loglevel=None).config.consumer_group == DEFAULT_CONSUMER_GROUP
    assert ServiceSettings.resolve({"Quix__Broker__Address": "b:9092"}).consumer_group == DEFAULT_CONSUMER_GROUP
    assert Consumer("b:9092", None, "earliest")._config["group.id"] == DEFAULT_CONSUMER_GROUP


def test_flush_timeout_is_the_application_producers_and_the_prefix_goes_before_transactional_ids(clean_env):
    app = Application("b:9092", consumer_group="g", loglevel=None,
                      consumer_extra_config={"max.poll.interval.ms": 45_000})
    assert app.config.flush_timeout == 45.0
    assert app._producer._producer._flush_timeout == 45.0  # the output producer flushes within it
    default = Application("b:9092", consumer_group="g", loglevel=None)
    assert default._producer._producer._flush_timeout == 300.0
    assert transactional_id("tid", "ws") == "ws-tid" and transactional_id("tid", "") == "tid"
    assert transactional_id(None, "ws", default="g-1") == "ws-g-1"
    assert transactional_id(None, "").count("-") == 4  # a random uuid4
    eos = Application("b:9092", consumer_group="g", processing_guarantee="exactly-once", loglevel=None)
    assert eos._producer._producer._config["transactional.id"].startswith("g-")  # no prefix outside Quix Cloud


def test_process_hooks_are_immutable_and_scoped_to_the_block(clean_env):
    class Watching(RunObserver):
        pass

    watcher = Watching()
    assert process_hooks() == ProcessHooks() and process_hooks().observers == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        process_hooks().check_only = True  # type: ignore[misc]
    hooks = ProcessHooks(observers=(watcher,), application_defaults={"broker_address": "svc:9092",
                                                                      "consumer_group": "svc"})
    with installed_hooks(hooks):
        app = Application(loglevel=None)
        assert app._observers == [watcher]
        assert (app.config.broker_address.bootstrap_servers, app.config.consumer_group) == ("svc:9092", "svc")
        assert Application("arg:9092", consumer_group="mine", loglevel=None).config.consumer_group == "mine"
    assert process_hooks() == ProcessHooks()
    assert Application("b:9092", loglevel=None)._observers == []


def test_check_gives_a_script_the_settings_without_writing_the_environment(tmp_path, clean_env):
    seen = tmp_path / "seen.txt"
    script = tmp_path / "app_from_script.py"
    script.write_text(
        "from stream_edge import Application\n"
        "app = Application(loglevel=None)\n"
        f"open({str(seen)!r}, 'w').write(f'{{app.config.broker_address.bootstrap_servers}} '\n"
        "                              f'{app.config.consumer_group} {app.config.state_dir}')\n"
        "app.dataframe(app.topic('readings'))\n"
        "app.run()\n")
    settings = ServiceSettings.resolve({}, flags={"broker_address": "127.0.0.1:1", "consumer_group": "svc-group",
                                                  "state_dir": str(tmp_path / "st")})
    environment = dict(os.environ)
    assert cli._check(str(script), settings) == "input topics ['readings'], sinks none"
    assert seen.read_text() == f"127.0.0.1:1 svc-group {tmp_path / 'st'}"
    assert dict(os.environ) == environment
    assert process_hooks() == ProcessHooks()  # check mode ended with the command

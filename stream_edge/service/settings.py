"""ServiceSettings: the ``stream-edge`` command's settings, from the environment, a config file
and flags (later sources win: flags > config file > environment), each value remembering where
it came from so an error names the setting and its source.

=======================  ====================================================  ==================
setting                  environment (first found)                             default
=======================  ====================================================  ==================
broker_address           ``STREAM_EDGE_BROKER_ADDRESS``, ``Quix__Broker__Address``  required
consumer_group           ``STREAM_EDGE_CONSUMER_GROUP``, ``Quix__Consumer_Group``   ``quixstreams-default``
state_dir                ``STREAM_EDGE_STATE_DIR``, ``Quix__State__Dir``            ``state``
auto_offset_reset        ``STREAM_EDGE_AUTO_OFFSET_RESET``                          ``latest``
commit_interval          ``STREAM_EDGE_COMMIT_INTERVAL`` (seconds)                  ``5``
processing_guarantee     ``STREAM_EDGE_PROCESSING_GUARANTEE``                       ``at-least-once``
metrics_port             ``STREAM_EDGE_METRICS_PORT`` (0: no metrics server)       ``0``
metrics_host             ``STREAM_EDGE_METRICS_HOST`` (the image: ``0.0.0.0``)    ``127.0.0.1``
ready_stall_seconds      ``STREAM_EDGE_READY_STALL_SECONDS``                        ``60``
ready_paused_seconds     ``STREAM_EDGE_READY_PAUSED_SECONDS``                       ``120``
live_stall_seconds       ``STREAM_EDGE_LIVE_STALL_SECONDS``                         ``300``
dead_letter_topic        ``STREAM_EDGE_DEAD_LETTER_TOPIC`` (empty: none)           none
log_level                ``STREAM_EDGE_LOG_LEVEL``                                  ``INFO``
log_format               ``STREAM_EDGE_LOG_FORMAT`` (``text`` or ``json``)        ``text``
log_summary_interval     ``STREAM_EDGE_LOG_SUMMARY_INTERVAL`` (seconds; 0: off)    ``60``
=======================  ====================================================  ==================

The config file is TOML, with the same names as top-level keys or under ``[stream_edge]``; a
flag is ``--set name=value`` (``--metrics-port``, ``--metrics-host``, ``--dead-letter-topic`` and
``--config`` have their own flags). ``ready_*`` and ``live_*``: see ``/readyz`` and ``/healthz`` in
docs/operations.md. A script target builds its own Application, so ``processing_guarantee``,
``dead_letter_topic``, ``commit_interval`` and ``auto_offset_reset`` are its own to decide
(:data:`SCRIPT_OWNED_SETTINGS`): given by a flag or the config file they are an error, from the
environment a warning.

Example::

    >>> s = ServiceSettings.resolve(env={"Quix__Broker__Address": "k:9092"}, flags={"commit_interval": "2"})
    >>> s.broker_address, s.commit_interval, s.source("commit_interval")
    ('k:9092', 2.0, 'flag --set commit_interval')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from stream_edge.app_config import DEFAULT_CONSUMER_GROUP

__all__ = ("ServiceSettings", "SettingsError", "SCRIPT_OWNED_SETTINGS")


class SettingsError(ValueError):
    """A setting is missing or invalid; the message names it and where it came from."""


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(f"must be one of {list(allowed)}")
        return raw
    return parse


def _positive_float(raw: str) -> float:
    value = float(raw)
    if value <= 0:
        raise ValueError("must be a positive number of seconds")
    return value


def _non_negative_float(raw: str) -> float:
    value = float(raw)
    if value < 0:
        raise ValueError("must be a number of seconds, 0 or more")
    return value


def _port(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 65535:
        raise ValueError("must be a TCP port (0 disables the metrics server)")
    return value


def _host(raw: str) -> str:
    host = raw.strip()
    if not host or any(c.isspace() for c in host):
        raise ValueError("must be an interface address such as 127.0.0.1 or 0.0.0.0")
    return host


def _topic_name(raw: str) -> str:
    name = raw.strip()
    if any(c.isspace() for c in name):
        raise ValueError("must be a Kafka topic name (empty: no dead-letter topic)")
    return name


# name -> (environment variables, default, parser)
_SETTINGS: Dict[str, Tuple[Tuple[str, ...], Optional[str], Callable[[str], Any]]] = {
    "broker_address": (("STREAM_EDGE_BROKER_ADDRESS", "Quix__Broker__Address"), None, str),
    # the Application's default (one for the package), so a script and a function target agree
    "consumer_group": (("STREAM_EDGE_CONSUMER_GROUP", "Quix__Consumer_Group"), DEFAULT_CONSUMER_GROUP, str),
    # EDGE_*: the names of the data-lake service's environment file (infra/systemd), still honoured
    "state_dir": (("STREAM_EDGE_STATE_DIR", "Quix__State__Dir", "EDGE_STATE_DIR"), "state", str),
    "auto_offset_reset": (("STREAM_EDGE_AUTO_OFFSET_RESET", "EDGE_AUTO_OFFSET_RESET"), "latest",
                          _choice("earliest", "latest", "error")),
    "commit_interval": (("STREAM_EDGE_COMMIT_INTERVAL", "EDGE_COMMIT_INTERVAL"), "5", _positive_float),
    "processing_guarantee": (("STREAM_EDGE_PROCESSING_GUARANTEE", "EDGE_PROCESSING_GUARANTEE"), "at-least-once",
                             _choice("at-least-once", "exactly-once")),
    "metrics_port": (("STREAM_EDGE_METRICS_PORT",), "0", _port),
    # Loopback unless told otherwise: the endpoints are not authenticated (the image binds all).
    "metrics_host": (("STREAM_EDGE_METRICS_HOST",), "127.0.0.1", _host),
    "ready_stall_seconds": (("STREAM_EDGE_READY_STALL_SECONDS",), "60", _positive_float),
    "ready_paused_seconds": (("STREAM_EDGE_READY_PAUSED_SECONDS",), "120", _positive_float),
    "live_stall_seconds": (("STREAM_EDGE_LIVE_STALL_SECONDS",), "300", _positive_float),
    "dead_letter_topic": (("STREAM_EDGE_DEAD_LETTER_TOPIC",), "", _topic_name),
    "log_level": (("STREAM_EDGE_LOG_LEVEL",), "INFO", _choice("DEBUG", "INFO", "WARNING", "ERROR")),
    "log_format": (("STREAM_EDGE_LOG_FORMAT",), "text", _choice("text", "json")),
    "log_summary_interval": (("STREAM_EDGE_LOG_SUMMARY_INTERVAL",), "60", _non_negative_float),
}


#: Application arguments that a script target's own ``Application(...)`` decides: the Application
#: has its own defaults for them, so a value the script leaves out cannot be told from one it
#: chose, and the command's settings cannot be applied either way (broker, group and state dir
#: can: their Application default is "not given"). The command refuses them for a script target.
SCRIPT_OWNED_SETTINGS = ("processing_guarantee", "dead_letter_topic", "commit_interval", "auto_offset_reset")


# Settings with a flag of their own (the others: --set name=value)
_FLAG_NAMES = {"metrics_port": "flag --metrics-port", "metrics_host": "flag --metrics-host",
               "dead_letter_topic": "flag --dead-letter-topic"}


@dataclass
class ServiceSettings:
    """Resolved settings (see the module docstring); ``source(name)`` says where one came from."""

    broker_address: str
    consumer_group: str
    state_dir: str
    auto_offset_reset: str
    commit_interval: float
    processing_guarantee: str
    metrics_port: int
    metrics_host: str
    ready_stall_seconds: float
    ready_paused_seconds: float
    live_stall_seconds: float
    dead_letter_topic: str
    log_level: str
    log_format: str
    log_summary_interval: float
    sources: Dict[str, str] = field(default_factory=dict, repr=False)

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")

    def application_kwargs(self) -> Dict[str, Any]:
        """The Application arguments these settings give."""
        kwargs: Dict[str, Any] = {
            "broker_address": self.broker_address, "consumer_group": self.consumer_group,
            "state_dir": self.state_dir, "auto_offset_reset": self.auto_offset_reset,
            "commit_interval": self.commit_interval, "processing_guarantee": self.processing_guarantee,
            "loglevel": self.log_level}
        if self.dead_letter_topic:
            kwargs["dead_letter_topic"] = self.dead_letter_topic
        return kwargs

    def script_defaults(self) -> Dict[str, Any]:
        """What an Application a script builds itself takes from these settings where the script
        passes no argument (``ProcessHooks.application_defaults``): broker, group, state dir."""
        return {"broker_address": self.broker_address, "consumer_group": self.consumer_group,
                "state_dir": self.state_dir}

    def not_applied_to_a_script(self) -> List[Tuple[str, str]]:
        """``(name, source)`` of each setting given (not a default) that a script target cannot
        apply: see :data:`SCRIPT_OWNED_SETTINGS`."""
        return [(name, self.source(name)) for name in SCRIPT_OWNED_SETTINGS if self.source(name) != "default"]

    @classmethod
    def resolve(cls, env: Mapping[str, str], config_file: Optional[str] = None,
                flags: Optional[Mapping[str, str]] = None) -> "ServiceSettings":
        raw: Dict[str, Tuple[str, str]] = {}  # name -> (value, source)
        for name, (variables, default, _) in _SETTINGS.items():
            for variable in variables:
                if env.get(variable):
                    raw[name] = (env[variable], f"environment {variable}")
                    break
            else:
                if default is not None:
                    raw[name] = (default, "default")
        if config_file:
            for name, value in _read_config(config_file).items():
                raw[name] = (str(value), f"config file {config_file}")
        for name, value in (flags or {}).items():
            if name not in _SETTINGS:
                raise SettingsError(f"unknown setting {name!r} (flag --set); known: {sorted(_SETTINGS)}")
            raw[name] = (value, _FLAG_NAMES.get(name, f"flag --set {name}"))
        values: Dict[str, Any] = {}
        for name, (_, default, parse) in _SETTINGS.items():
            if name not in raw:
                raise SettingsError(f"{name} is required: set {_SETTINGS[name][0][0]} (or "
                                    f"{' / '.join(_SETTINGS[name][0][1:]) or 'a config file entry'}), "
                                    f"a config file entry or --set {name}=...")
            value, source = raw[name]
            try:
                values[name] = parse(value)
            except ValueError as exc:
                raise SettingsError(f"{name}={value!r} (from {source}) is invalid: {exc}") from None
        return cls(**values, sources={name: source for name, (_, source) in raw.items()})


def _read_config(path: str) -> Dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise SettingsError(f"config file {path}: reading TOML needs Python 3.11+; use environment variables "
                            f"or --set flags") from None

    try:
        document = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise SettingsError(f"config file {path} cannot be read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"config file {path} is not valid TOML: {exc}") from None
    section = document.get("stream_edge", document)
    unknown = sorted(set(section) - set(_SETTINGS))
    if unknown:
        raise SettingsError(f"config file {path}: unknown setting(s) {unknown}; known: {sorted(_SETTINGS)}")
    return dict(section)

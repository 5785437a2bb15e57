"""``ApplicationConfig``: the resolved, immutable settings of an Application (Quix Streams 3.28's
fields and rules, without depending on pydantic: errors are ``ValueError`` naming the field, as the
known differences in docs/compatibility.md say; an unknown keyword argument and an assignment raise
pydantic's own ``ValidationError``, as Quix does, when pydantic is installed)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
import uuid
from typing import Any, Dict, Mapping, Optional, Tuple

from stream_edge.kafka.configuration import ConnectionConfig
from stream_edge.kafka.validation import pydantic_error

__all__ = ("ApplicationConfig", "FrozenConfigError", "DEFAULT_CONSUMER_GROUP", "resolve_config",
           "transactional_id")

#: The consumer group when none is given (argument, service setting or environment), as in Quix.
DEFAULT_CONSUMER_GROUP = "quixstreams-default"

_DEFAULT_MAX_POLL_INTERVAL_MS = 300_000
_CHOICES: Dict[str, Tuple[str, ...]] = {
    "auto_offset_reset": ("earliest", "latest", "error"),
    "processing_guarantee": ("at-least-once", "exactly-once"),
    "state_recovery_offset_reset": ("earliest", "latest", "match"),
}
_NUMBERS = {"commit_interval": float, "commit_every": int, "consumer_poll_timeout": float,
            "producer_poll_timeout": float, "request_timeout": float, "topic_create_timeout": float,
            "max_partition_buffer_size": int, "broker_availability_timeout": float}


class FrozenConfigError(dataclasses.FrozenInstanceError, ValueError):
    """An ApplicationConfig field was assigned, pydantic not installed (a ``ValueError`` like Quix's
    pydantic error, and a ``dataclasses.FrozenInstanceError``)."""


@dataclasses.dataclass(init=False)  # immutable through __setattr__ below
class ApplicationConfig:
    """The resolved, immutable configuration of an Application.

    Unknown keyword arguments, a missing ``broker_address`` / ``consumer_group`` and values of the
    wrong kind raise ``ValueError`` naming the field; assigning a field raises pydantic's
    ``ValidationError`` (:class:`FrozenConfigError` without pydantic). :meth:`copy` returns a new, validated config.
    """

    broker_address: ConnectionConfig
    consumer_group: str
    consumer_group_prefix: str = ""
    auto_offset_reset: str = "latest"
    commit_interval: float = 5.0
    commit_every: int = 0
    consumer_extra_config: dict = dataclasses.field(default_factory=dict)
    producer_extra_config: dict = dataclasses.field(default_factory=dict)
    state_dir: Path = Path("state")
    rocksdb_options: Any = None
    consumer_poll_timeout: float = 1.0
    producer_poll_timeout: float = 0.0
    auto_create_topics: bool = True
    use_changelog_topics: bool = True
    request_timeout: float = 30
    topic_create_timeout: float = 60
    processing_guarantee: str = "at-least-once"
    auto_recover_from_source_offset_out_of_range: bool = True
    state_recovery_offset_reset: str = "earliest"
    max_partition_buffer_size: int = 10000
    broker_availability_timeout: float = 120.0

    def __init__(self, **values: Any) -> None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        unknown = [name for name in values if name not in fields]
        if unknown:
            raise (pydantic_error("ApplicationConfig", "extra_forbidden", [(name, values[name]) for name in unknown])
                   or ValueError(f"ApplicationConfig: {', '.join(sorted(unknown))}: Extra inputs are not permitted"))
        for name, field in fields.items():
            if name in values:
                value = values[name]
            elif field.default is not dataclasses.MISSING:
                value = field.default
            elif field.default_factory is not dataclasses.MISSING:
                value = field.default_factory()
            else:
                raise ValueError(f"ApplicationConfig: {name}: Field required")
            object.__setattr__(self, name, _checked(name, value))

    def __setattr__(self, name: str, value: Any) -> None:
        raise (pydantic_error("ApplicationConfig", "frozen_instance", [(name, value)])
               or FrozenConfigError(f"ApplicationConfig: {name}: Instance is frozen"))

    def __delattr__(self, name: str) -> None:
        raise (pydantic_error("ApplicationConfig", "frozen_instance", [(name, None)])
               or FrozenConfigError(f"ApplicationConfig: {name}: Instance is frozen"))

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly-once"

    @property
    def flush_timeout(self) -> float:
        """Seconds a producer flush may take: the consumer's ``max.poll.interval.ms`` (default 300 s).
        The application's producer is created with it (a flush that takes longer would cost the
        consumer its group membership anyway)."""
        return self.consumer_extra_config.get("max.poll.interval.ms", _DEFAULT_MAX_POLL_INTERVAL_MS) / 1000

    def copy(self, **kwargs: Any) -> "ApplicationConfig":
        """A new config with some fields replaced: validated like the constructor, the values kept
        as given (as Quix's ``model_copy``: ``copy(commit_interval=4).commit_interval == 4``)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values.update(kwargs)
        copied = ApplicationConfig(**values)
        for name, value in kwargs.items():
            object.__setattr__(copied, name, value)
        return copied


def _checked(name: str, value: Any) -> Any:
    """``value`` for field ``name``, converted where Quix converts it; ``ValueError`` if it cannot be."""
    if name == "broker_address" and isinstance(value, str):
        return ConnectionConfig(bootstrap_servers=value)
    if name == "broker_address" and not isinstance(value, ConnectionConfig):
        raise ValueError(f"ApplicationConfig: broker_address: Input should be an instance of ConnectionConfig, "
                         f"got {type(value).__name__}")
    if name in ("consumer_group", "consumer_group_prefix") and not isinstance(value, str):
        raise ValueError(f"ApplicationConfig: {name}: Input should be a valid string, got {value!r}")
    if name in _CHOICES and value not in _CHOICES[name]:
        allowed = " or ".join(repr(c) for c in _CHOICES[name])
        raise ValueError(f"ApplicationConfig: {name}: Input should be {allowed}, got {value!r}")
    if name in _NUMBERS:
        kind = _NUMBERS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError(f"ApplicationConfig: {name}: Input should be a valid number, got {value!r}")
        try:
            converted = kind(value)
        except ValueError:
            raise ValueError(f"ApplicationConfig: {name}: Input should be a valid number, got {value!r}") from None
        if kind is int and converted != float(value):
            raise ValueError(f"ApplicationConfig: {name}: Input should be a valid integer, got {value!r}")
        return converted
    if name == "state_dir":
        return Path(value)
    if name in ("consumer_extra_config", "producer_extra_config") and not isinstance(value, dict):
        raise ValueError(f"ApplicationConfig: {name}: Input should be a valid dictionary, got {value!r}")
    return value


def transactional_id(configured: Optional[str], prefix: str, default: Optional[str] = None) -> str:
    """The ``transactional.id`` of a transactional producer: the configured one (else ``default``,
    else a random one), prefixed by ``consumer_group_prefix`` when there is one (as in Quix)."""
    tid = configured or default or str(uuid.uuid4())
    return f"{prefix}-{tid}" if prefix else tid


def _first_env(env: Mapping[str, str], *names: str) -> Optional[str]:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def resolve_config(arguments: Mapping[str, Any], env: Mapping[str, str],
                   service: Optional[Mapping[str, Any]] = None) -> ApplicationConfig:
    """The one place settings become an :class:`ApplicationConfig`.

    ``arguments`` are the ``Application(...)`` keyword arguments (``broker_address``,
    ``consumer_group`` and ``state_dir`` None when not given); ``service`` the ``stream-edge``
    command's resolved settings for an Application a script builds itself (see
    ``stream_edge.processing.observer.ProcessHooks``); ``env`` the process environment. An
    argument wins over a service setting, which wins over the environment (``Quix__Broker__Address``,
    ``Quix__Consumer__Group`` / ``Quix__Consumer_Group``, ``Quix__State__Dir``), which wins over the
    defaults. Errors are ``ValueError`` naming the setting.
    """
    service = service or {}
    given = dict(arguments)
    if given.pop("quix_portal_api", None):
        raise ValueError("quix_portal_api is a Quix Cloud setting, which stream_edge does not support; "
                         "pass broker_address (or set Quix__Broker__Address)")
    token, builder = given.pop("quix_sdk_token", None), given.pop("quix_config_builder", None)
    broker_address = given.get("broker_address") or service.get("broker_address")
    if token or builder or _first_env(env, "Quix__Sdk__Token") and not broker_address:
        raise ValueError("Quix Cloud connections (quix_sdk_token / Quix__Sdk__Token) are not supported by "
                         "stream_edge; pass broker_address (or set Quix__Broker__Address)")
    broker_address = broker_address or _first_env(env, "Quix__Broker__Address")
    if not broker_address:
        raise ValueError('Either "broker_address" or "quix_sdk_token" must be provided')  # 3.28.1's words
    given["broker_address"] = broker_address
    given["consumer_group"] = (given.get("consumer_group") or service.get("consumer_group")
                               or _first_env(env, "Quix__Consumer__Group", "Quix__Consumer_Group")
                               or DEFAULT_CONSUMER_GROUP)
    state_dir = given.get("state_dir")
    given["state_dir"] = (state_dir if state_dir is not None
                          else service.get("state_dir") or _first_env(env, "Quix__State__Dir") or "state")
    _check_arguments(given)
    for name in ("consumer_extra_config", "producer_extra_config"):
        given[name] = dict(given.get(name) or {})
    for name in ("request_timeout", "topic_create_timeout"):
        if name in given:
            given[name] = float(given[name])
    return ApplicationConfig(**given)


def _check_arguments(given: Mapping[str, Any]) -> None:
    """The Application's own argument checks (worded as its documentation has them)."""
    guarantee = given.get("processing_guarantee", "at-least-once")
    if guarantee not in _CHOICES["processing_guarantee"]:
        raise ValueError(f"processing_guarantee must be one of {_CHOICES['processing_guarantee']}, got {guarantee!r}")
    reset = given.get("auto_offset_reset", "latest")
    if reset not in _CHOICES["auto_offset_reset"]:
        raise ValueError(f"auto_offset_reset must be 'earliest', 'latest' or 'error', got {reset!r}")
    recovery = given.get("state_recovery_offset_reset", "earliest")
    if recovery not in _CHOICES["state_recovery_offset_reset"]:
        raise ValueError("state_recovery_offset_reset must be 'earliest', 'latest' or 'match', "
                         f"got {recovery!r}")
    buffer_size = given.get("max_partition_buffer_size", 10000)
    if buffer_size <= 0:
        raise ValueError(f"max_partition_buffer_size must be > 0, got {buffer_size}")
    availability = given.get("broker_availability_timeout", 120.0)
    if availability < 0:
        raise ValueError(f"broker_availability_timeout must be >= 0, got {availability}")

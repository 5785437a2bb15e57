"""``ApplicationConfig``: the resolved, immutable settings of an Application (Quix Streams 3.28's
fields and rules, without pydantic: errors are ``ValueError`` naming the field, as the known
differences in docs/compatibility.md say)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Dict, Tuple

from stream_edge.kafka.configuration import ConnectionConfig

__all__ = ("ApplicationConfig", "FrozenConfigError")

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
    """An ApplicationConfig field was assigned (a ``ValueError`` like Quix's pydantic error, and a
    ``dataclasses.FrozenInstanceError``)."""


@dataclasses.dataclass(init=False)  # immutable through __setattr__ below
class ApplicationConfig:
    """The resolved, immutable configuration of an Application.

    Unknown keyword arguments, a missing ``broker_address`` / ``consumer_group`` and values of the
    wrong kind raise ``ValueError`` naming the field; assigning a field raises
    :class:`FrozenConfigError`. :meth:`copy` returns a new, validated config.
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
        unknown = sorted(set(values) - set(fields))
        if unknown:
            raise ValueError(f"ApplicationConfig: {', '.join(unknown)}: Extra inputs are not permitted")
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
        raise FrozenConfigError(f"ApplicationConfig: {name}: Instance is frozen")

    def __delattr__(self, name: str) -> None:
        raise FrozenConfigError(f"ApplicationConfig: {name}: Instance is frozen")

    @property
    def exactly_once(self) -> bool:
        return self.processing_guarantee == "exactly-once"

    @property
    def flush_timeout(self) -> float:
        """Seconds a producer flush may take: the consumer's ``max.poll.interval.ms`` (default 300 s)."""
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

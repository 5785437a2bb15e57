"""Tumbling and hopping window definitions with ``before_update`` / ``after_update`` (Quix 3.28's
early expiration): ``sdf.tumbling_window(..., after_update=...)`` returns one of these.

Example (close a window as soon as it holds 100 messages)::

    sdf.tumbling_window(timedelta(minutes=1), after_update=lambda agg, value, key, ts, headers: agg >= 100)
       .count().final()
"""

from __future__ import annotations

from typing import Any, Optional, Type

from .aggregations import Aggregation
from .definitions import FixedTimeWindowDefinition, HoppingTimeWindowDefinition, TumblingTimeWindowDefinition
from .time_based import FixedTimeWindow, UpdateCallback

__all__ = ("EarlyExpiringTumblingWindowDefinition", "EarlyExpiringHoppingWindowDefinition", "early_expiring")


class _EarlyExpiring:
    """Creates windows with the definition's early expiration callbacks."""

    def __init__(self, *args: Any, before_update: Optional[UpdateCallback] = None,
                 after_update: Optional[UpdateCallback] = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._before_update = before_update
        self._after_update = after_update

    def _create_window(self: Any, aggregation: Aggregation) -> Any:
        return FixedTimeWindow(self._duration_ms, self._grace_ms, self._window_name(aggregation.name),
                               self._dataframe, aggregation, step_ms=self._step_ms, on_late=self._on_late,
                               before_update=self._before_update, after_update=self._after_update)


class EarlyExpiringTumblingWindowDefinition(_EarlyExpiring, TumblingTimeWindowDefinition):
    """A tumbling window definition with ``before_update`` / ``after_update``."""


class EarlyExpiringHoppingWindowDefinition(_EarlyExpiring, HoppingTimeWindowDefinition):
    """A hopping window definition with ``before_update`` / ``after_update``."""


def early_expiring(kind: Type[FixedTimeWindowDefinition], before_update: Optional[UpdateCallback],
                   after_update: Optional[UpdateCallback], **kwargs: Any) -> FixedTimeWindowDefinition:
    """The definition of ``kind`` (tumbling or hopping) with the callbacks; without any: ``kind`` itself."""
    if before_update is None and after_update is None:
        return kind(**kwargs)
    for label, callback in (("before_update", before_update), ("after_update", after_update)):
        if callback is not None and not callable(callback):
            raise TypeError(f"{label} must be a callable, got {callback!r}")
    cls: Type[FixedTimeWindowDefinition] = (EarlyExpiringHoppingWindowDefinition
                                            if issubclass(kind, HoppingTimeWindowDefinition)
                                            else EarlyExpiringTumblingWindowDefinition)
    return cls(before_update=before_update, after_update=after_update, **kwargs)  # type: ignore[call-arg]

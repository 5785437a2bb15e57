"""Join helpers: ``on_merge`` mergers, argument checks, co-partitioning check.

A merger is called as ``merger(left, right)``; either side is ``None`` when an outer side has no
match. The dict modes then return the other side unchanged.

Example::

    >>> get_merger("keep-left")({"x": 1, "l": 1}, {"x": 2, "r": 2})
    {'x': 1, 'r': 2, 'l': 1}
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Iterable, Literal, Union

from .exceptions import StoreAlreadyRegisteredError, TopicPartitionsMismatch

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.dataframe.seams import DataframeSeams
    from stream_edge.state.store_ref import StoreRef

__all__ = ("OnOverlap", "Merger", "get_merger", "to_ms", "check_joinable", "register_join_store")

OnOverlap = Literal["keep-left", "keep-right", "raise"]
Merger = Callable[[Any, Any], Any]
_MODES = ("keep-left", "keep-right", "raise")


def _keep_left(left: Any, right: Any) -> Any:
    if right is None:
        return left
    if left is None:
        return right
    return {**right, **left}


def _keep_right(left: Any, right: Any) -> Any:
    if right is None:
        return left
    if left is None:
        return right
    return {**left, **right}


def _raise_on_overlap(left: Any, right: Any) -> Any:
    if right is None:
        return left
    if left is None:
        return right
    overlap = left.keys() & right.keys()
    if overlap:
        raise ValueError(f"Overlapping columns: {', '.join(sorted(map(str, overlap)))}."
                         "You need to provide either an \"on_merge\" value of 'keep-left' or 'keep-right' "
                         "or a custom merger function.")
    return {**left, **right}


def get_merger(on_merge: Union[OnOverlap, Merger]) -> Merger:
    """The merge function of an ``on_merge`` argument (a mode name or a callable)."""
    if callable(on_merge):
        return on_merge
    if on_merge == "keep-left":
        return _keep_left
    if on_merge == "keep-right":
        return _keep_right
    if on_merge == "raise":
        return _raise_on_overlap
    raise ValueError(f'Invalid "on_merge" value: {on_merge}. Provide either one of '
                     f'{", ".join(_MODES)} or a callable to merge records manually.')


def to_ms(value: Union[int, float, timedelta]) -> int:
    """Milliseconds of an ``int`` or a ``timedelta``."""
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


def check_how(how: str, allowed: Iterable[str]) -> None:
    if how not in tuple(allowed):
        raise ValueError(f"Join type not supported: {how}")


def check_joinable(left: "DataframeSeams", right: "DataframeSeams") -> None:
    """Refuse self-joins and topics with different partition counts (asks the broker, as Quix does)."""
    if left.stream_id == right.stream_id or set(t.name for t in left.topics) & set(t.name for t in right.topics):
        raise ValueError("Joining dataframes originating from the same topic is not yet supported.")
    counts = []
    for topic in (*left.topics, *right.topics):
        try:
            counts.append((topic.name, topic.broker_config.num_partitions))
        except RuntimeError:  # a topic outside an application's TopicManager: nothing to compare
            return
    if len({count for _, count in counts}) > 1:
        listed = ", ".join(f'"{name}" ({count} partitions)' for name, count in counts)
        raise TopicPartitionsMismatch(
            f"The underlying topics must have the same number of partitions to use State; got {listed}")


def register_join_store(sdf: "DataframeSeams", name: str) -> "StoreRef":
    """Register the join's store on ``sdf``'s stream; a taken name is an error, as in Quix."""
    manager = sdf.processing_context.state_manager
    if name in manager.stores.get(sdf.stream_id, {}):
        raise StoreAlreadyRegisteredError(
            f'Store "{name}" for stream_id "{sdf.stream_id}" is already registered; provide a different name')
    return sdf.register_store(store_name=name, windowed=True)

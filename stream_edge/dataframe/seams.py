"""What windows, joins, ``concat`` and the registry use of a StreamingDataFrame: its public seams.

The modules that build on a dataframe (``concat.py``, ``registry.py``, ``joins/``, ``windows/``)
type it as :class:`DataframeSeams` instead of importing ``dataframe.py``, so the package's imports
go one way: ``dataframe.py`` imports them (lazily, when an operation needs them), never the
reverse. :class:`~stream_edge.dataframe.dataframe.StreamingDataFrame` implements it; the names are
Quix Streams 3.28's where it has them (``stream``, ``stream_id``, ``topics``,
``processing_context``, ``register_store``, ``__dataframe_clone__``).

Example (a window's wiring)::

    ref = sdf.register_store(store_name="tumbling_window_60000_sum", windowed=True)
    transaction = sdf.current_transaction(ref)           # per message: transaction()
    result = sdf.add_expanding_op(window_op)             # window_op -> [(value, key, ts, headers), ...]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Tuple, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.core.stream import Stream
    from stream_edge.models.topics import Topic
    from stream_edge.processing.context import ProcessingContext
    from stream_edge.state.store_ref import StoreRef

__all__ = ("DataframeSeams", "ExpandingOp", "Dataframe")

#: ``(value, key, timestamp, headers) -> iterable of (value, key, timestamp, headers)``
ExpandingOp = Callable[[Any, Any, int, Any], Any]
#: a dataframe type: what the seams return is of the same type as the dataframe asked
Dataframe = TypeVar("Dataframe", bound="DataframeSeams")


class DataframeSeams(Protocol):
    """The part of a StreamingDataFrame other modules of the package build on."""

    @property
    def topics(self) -> Tuple["Topic", ...]:
        """The input topics (one, or several after ``concat`` and joins)."""

    @property
    def stream_id(self) -> str:
        """The stream the dataframe's state belongs to (``left--right`` after ``concat``)."""

    @property
    def stream(self) -> "Stream":
        """The dataframe's node of its operations tree."""

    @property
    def processing_context(self) -> "ProcessingContext":
        """The application's definition-time topology (state manager, cursor, producer)."""

    def register_store(self, store_type: Optional[str] = None, *, store_name: str = "default",
                       windowed: bool = False) -> "StoreRef":
        """Register a store of the dataframe's stream; its reference."""

    def current_transaction(self, ref: "StoreRef") -> Callable[[], Any]:
        """A function returning ``ref``'s transaction of the partition being processed."""

    def add_expanding_op(self: Dataframe, func: ExpandingOp) -> Dataframe:
        """A new dataframe after ``func``, each returned record going on."""

    def __dataframe_clone__(self: Dataframe, *topics: "Topic", stream: Optional["Stream"] = None,
                            stream_id: Optional[str] = None) -> Dataframe:
        """A dataframe of the same application on ``stream`` (see StreamingDataFrame)."""

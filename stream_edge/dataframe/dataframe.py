"""StreamingDataFrame: records operations lazily; the Application composes them per topic.

Operations are nodes of a :class:`~stream_edge.core.stream.Stream` tree rooted at the input topic.
``apply``/``filter``/``set_timestamp``... return a new StreamingDataFrame on a child node;
in-place operations (``update``, ``to_topic``, column assignment, ``drop``, ``print``) move this
dataframe to the new node and return it. Two operations on the same node make two branches.
"""

from __future__ import annotations

import inspect
import operator
import pprint
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Literal, Optional, Union, cast

import orjson

from stream_edge.core.stream import AssignFunction, Stream, ToTopicFunction, VoidExecutor

from .base import BaseStreaming
from .exceptions import GroupByLimitExceeded, InvalidOperation
from .series import StreamingSeries
from .utils import ensure_milliseconds

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic, TopicManager
    from stream_edge.processing.context import ProcessingContext
    from stream_edge.state.store_ref import StoreRef

    from .registry import DataframeRegistry

__all__ = ("StreamingDataFrame",)


def _ms(value: Union[int, float, timedelta]) -> int:
    if isinstance(value, float):
        return int(value)
    return ensure_milliseconds(value)


_ADD_PARAMETERS = ("value", "key", "timestamp", "headers", "topic", "partition", "offset")


def _positional_add(sink: Any) -> bool:
    """True when ``sink.add`` takes the seven record arguments positionally in the base order,
    so the per-record call can pass them by position (cheaper than keywords)."""
    try:
        params = list(inspect.signature(sink.add).parameters.values())
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return (len(params) >= 7 and tuple(p.name for p in params[:7]) == _ADD_PARAMETERS
            and all(p.kind in kinds for p in params[:7])
            and all(p.default is not inspect.Parameter.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                    for p in params[7:]))


def state_prefix(key: Any) -> bytes:
    """The state prefix of a message key: raw bytes as they are, others encoded."""
    if type(key) is bytes:
        return key
    if type(key) is str:
        return key.encode()
    return orjson.dumps(key)


class StreamingDataFrame(BaseStreaming):
    """A lazily built processing pipeline over one input topic.

    Example::

        app = Application(broker_address="localhost:9092", consumer_group="g")
        sdf = app.dataframe(app.topic("input"))
        sdf = sdf.apply(lambda v: {**v, "x": 1}).filter(lambda v: v["x"] > 0)
        sdf["y"] = sdf["x"] * 2
        sdf.to_topic(app.topic("output"))
        app.run()
    """

    def __init__(self, *topics: "Topic", topic_manager: "TopicManager", registry: "DataframeRegistry",
                 processing_context: "ProcessingContext", stream: Optional[Stream] = None,
                 stream_id: Optional[str] = None) -> None:
        if not topics:
            raise ValueError("a StreamingDataFrame needs an input topic")
        self._topics = tuple(topics)
        self._topic_manager = topic_manager
        self._registry = registry
        self._processing_context = processing_context
        self._stream = stream if stream is not None else Stream()
        self._stream_id = stream_id or topics[0].name
        self._grouped = False

    # -- properties -------------------------------------------------------------------------
    @property
    def topics(self) -> tuple:
        return self._topics

    @property
    def topic(self) -> "Topic":
        return self._topics[0]

    @property
    def stream_id(self) -> str:
        """Identifies the state of this dataframe: its input topic's name, or the sorted names of the
        topics it reads joined by ``--`` (after ``concat`` or a join)."""
        return self._stream_id

    @property
    def processing_context(self) -> "ProcessingContext":
        return self._processing_context

    @property
    def registry(self) -> "DataframeRegistry":
        return self._registry

    @property
    def stream(self) -> Stream:
        """The operations of this dataframe (the leaf of its Stream tree), as in Quix."""
        return self._stream

    def _clone(self, stream: Stream) -> "StreamingDataFrame":
        return StreamingDataFrame(*self._topics, topic_manager=self._topic_manager, registry=self._registry,
                                  processing_context=self._processing_context, stream=stream,
                                  stream_id=self._stream_id)

    # -- seams for windows, joins and concat (public, as Quix Streams 3.28 names them) ----------
    def __dataframe_clone__(self, *topics: "Topic", stream: Optional[Stream] = None,
                            stream_id: Optional[str] = None) -> "StreamingDataFrame":
        """A dataframe of this application on ``stream`` (a new root when None), as Quix Streams' seam:
        with ``topics``, a dataframe of those topics (repeated ones once) whose stream id is their
        sorted names joined by ``--``; without, one of this dataframe's topics, under ``stream_id``
        (default: this dataframe's). ``topics`` and ``stream_id`` together are refused.

        Example (what ``concat`` builds): ``left.__dataframe_clone__(*left.topics, *right.topics, stream=merged)``
        """
        if topics and stream_id:
            raise ValueError('Cannot pass both "*topics" and "stream_id"')
        if topics:
            by_name: Dict[str, "Topic"] = {}
            for topic in topics:
                by_name.setdefault(topic.name, topic)
            chosen, stream_id = tuple(by_name.values()), "--".join(sorted(by_name))
        else:
            chosen, stream_id = self._topics, stream_id or self._stream_id
        return StreamingDataFrame(*chosen, topic_manager=self._topic_manager, registry=self._registry,
                                  processing_context=self._processing_context, stream=stream,
                                  stream_id=stream_id)

    def register_store(self, store_type: Optional[str] = None, *, store_name: str = "default",
                       windowed: bool = False) -> "StoreRef":
        """Register a state store of this dataframe's stream (fed by all its topics); return its
        :class:`~stream_edge.state.store_ref.StoreRef`, the one way to reach its transactions.

        Without arguments: the default store, as Quix Streams' ``register_store()`` (e.g. before
        functions that reach the state through ``message_context`` instead of ``stateful=True``).
        Windows and joins register their named stores with ``windowed=True``.
        """
        manager = self._processing_context.state_manager
        topics = [t.name for t in self._topics]
        if windowed:
            return manager.register_windowed_store(self._stream_id, store_name, topics=topics)
        return manager.register_store(self._stream_id, store_name, store_type, topics=topics)

    def current_transaction(self, ref: "StoreRef") -> Callable[[], Any]:
        """A function returning ``ref``'s transaction for the partition being processed (it reads the
        processing context's cursor per call; take it once, when the operator is built)."""
        cursor = self._processing_context.cursor  # the loop moves it; read per message
        transaction = ref.transaction

        def current() -> Any:
            return transaction(cursor.message.partition())
        return current

    def add_expanding_op(self, func: Callable[[Any, Any, int, Any], Any]) -> "StreamingDataFrame":
        """A new dataframe after ``func(value, key, timestamp, headers) -> [(value, key, timestamp,
        headers), ...]``, each returned record going on (none: the record stops). Windows and joins
        are added this way; it may change keys and timestamps, so it is no user-facing operation
        (as in Quix Streams, whose windows add ``stream.add_transform(expand=True)`` themselves)."""
        return self._clone(self._stream.add_transform(func, expand=True))

    def _stateful(self, func: Callable[..., Any], metadata: bool) -> Callable[[Any, Any, int, Any], Any]:
        """Wrap ``func`` so it gets the State of the current key as its last argument."""
        cursor = self._processing_context.cursor  # the loop moves it; read per message
        transaction = self.register_store().transaction
        prefix = state_prefix
        if metadata:
            def stateful(value, key, timestamp, headers):
                return func(value, key, timestamp, headers,
                            transaction(cursor.message.partition()).as_state(prefix=prefix(key)))
        else:
            def stateful(value, key, timestamp, headers):
                return func(value, transaction(cursor.message.partition()).as_state(prefix=prefix(key)))
        return stateful

    # -- operations ---------------------------------------------------------------------------
    def apply(self, func: Callable[..., Any], *, stateful: bool = False, expand: bool = False,
              metadata: bool = False) -> "StreamingDataFrame":
        """Replace the value with ``func(value)``; ``expand=True`` emits each item of the result.

        Example: ``sdf = sdf.apply(lambda v: v["temperature"])``
        """
        if stateful:
            func, metadata = self._stateful(func, metadata), True
        return self._clone(self._stream.add_apply(func, expand=expand, metadata=metadata))

    def update(self, func: Callable[..., Any], *, stateful: bool = False, metadata: bool = False) -> "StreamingDataFrame":
        """Mutate the value in place or run a side effect (in place; returns this dataframe).

        Example: ``sdf.update(lambda v: v.pop("debug", None))``
        """
        if stateful:
            func, metadata = self._stateful(func, metadata), True
        self._stream = self._stream.add_update(func, metadata=metadata)
        return self

    def filter(self, func: Callable[..., Any], *, stateful: bool = False, metadata: bool = False) -> "StreamingDataFrame":
        """Keep the records for which ``func`` returns a true-like value.

        Example: ``sdf = sdf.filter(lambda v: v["level"] > 3)``
        """
        if stateful:
            func, metadata = self._stateful(func, metadata), True
        return self._clone(self._stream.add_filter(func, metadata=metadata))

    def _add_transform(self, func: Callable[[Any, Any, int, Any], Any], expand: bool = False) -> "StreamingDataFrame":
        return self._clone(self._stream.add_transform(func, expand=expand))

    def set_timestamp(self, func: Callable[[Any, Any, int, Any], int]) -> "StreamingDataFrame":
        """Set the record's timestamp (ms) from ``func(value, key, timestamp, headers)``."""
        return self._add_transform(lambda v, k, t, h: (v, k, func(v, k, t, h), h))

    def set_headers(self, func: Callable[[Any, Any, int, Any], Any]) -> "StreamingDataFrame":
        """Set the record's headers from ``func(value, key, timestamp, headers)``."""
        return self._add_transform(lambda v, k, t, h: (v, k, t, func(v, k, t, h)))

    def to_topic(self, topic: Union["Topic", Callable[[Any, Any, int, Any], "Topic"]],
                 key: Optional[Callable[[Any], Any]] = None) -> "StreamingDataFrame":
        """Produce the value to ``topic`` (in place); ``key(value)`` sets a new message key.
        ``topic`` may be a callable ``(value, key, timestamp, headers) -> Topic`` choosing the
        topic of each record.

        Example: ``sdf.to_topic(app.topic("out"), key=lambda v: v["id"])``
        """
        register = getattr(self._topic_manager, "register", None)
        if not hasattr(topic, "name") and callable(topic):
            from .dynamic_topic import DynamicTopicProducer

            producer = DynamicTopicProducer(topic, key, self._processing_context, register,
                                            lambda: self._topic_manager.all_topics)
            return self.update(producer, metadata=True)
        topic = cast("Topic", topic)
        if register is not None and topic.name not in self._topic_manager.all_topics:
            register(topic)  # a Topic built directly (not via app.topic()) is created/validated too
        self._stream = self._stream.add_function(ToTopicFunction(self._processing_context.topic_output, topic, key))
        return self

    def print(self, pretty: bool = True, metadata: bool = False) -> "StreamingDataFrame":
        """Print the value (and key, timestamp, headers with ``metadata=True``) to stdout."""
        show = (lambda obj: pprint.pprint(obj, indent=2, sort_dicts=False)) if pretty else print

        def _print(value, key, timestamp, headers):
            show({"value": value, "key": key, "timestamp": timestamp, "headers": headers} if metadata else {"value": value})
        return self.update(_print, metadata=True)

    def print_table(self, size: int = 5, title: Optional[str] = None, metadata: bool = True, timeout: float = 5.0,
                    live: bool = True, live_slowdown: float = 0.5, columns: Optional[List[str]] = None,
                    column_widths: Optional[Dict[str, int]] = None) -> "StreamingDataFrame":
        """Print the most recent records as a table (in place; see ``stream_edge.dataframe.print_table``)."""
        from .print_table import TablePrinter

        return self.update(TablePrinter(size, title, metadata, timeout, live, live_slowdown, columns, column_widths),
                           metadata=True)

    def fill(self, *columns: str, **mapping: Any) -> "StreamingDataFrame":
        """Set missing or ``None`` columns of the value: to ``None`` for ``columns``, to the given
        constant for ``mapping`` (in place; returns this dataframe).

        Example: ``sdf.fill("y", z=0)`` turns ``{"x": 1, "z": None}`` into ``{"x": 1, "z": 0, "y": None}``
        """
        defaults = {**{column: None for column in columns}, **mapping}
        if not defaults:
            raise ValueError("fill() needs at least one column name or column=value")
        for column in defaults:
            if not isinstance(column, str):
                raise TypeError(f"fill() column names must be strings, got {column!r}")

        def _fill(value: Any) -> None:
            for column, default in defaults.items():
                if value.get(column) is None:
                    value[column] = default
        return self.update(_fill)

    def drop(self, columns: Union[str, List[str]], errors: Literal["ignore", "raise"] = "raise") -> "StreamingDataFrame":
        """Remove column(s) from the value (in place).

        Example: ``sdf.drop(["x", "y"])``
        """
        cols = [columns] if isinstance(columns, str) else list(columns)
        if not cols:
            return self
        if not all(isinstance(c, str) for c in cols):
            raise TypeError(f"column names must be strings, got {cols!r}")
        if errors == "ignore":
            def _drop(value):
                for col in cols:
                    value.pop(col, None)
        else:
            def _drop(value):
                for col in cols:
                    del value[col]
        return self.update(_drop)

    def contains(self, keys: Union[str, List[str]]) -> StreamingSeries:
        """A boolean series: is ``keys`` (a column name, or every name of a list) in the value?"""
        if isinstance(keys, str):
            key = keys
            return StreamingSeries(stream=Stream().add_apply(lambda value: key in value), sdf_id=id(self))
        names = list(keys)
        return StreamingSeries(stream=Stream().add_apply(lambda value: all(k in value for k in names)),
                               sdf_id=id(self))

    def group_by(self, key: Union[str, Callable[[Any], Any]], name: Optional[str] = None,
                 value_deserializer: Any = "json", key_deserializer: Any = "json",
                 value_serializer: Any = "json", key_serializer: Any = "json") -> "StreamingDataFrame":
        """Re-key the records by a column or ``key(value)``, through an internal repartition topic.

        Example: ``sdf = sdf.group_by("customer_id")``
        """
        if self._grouped:
            raise GroupByLimitExceeded("group_by() can be applied only once per StreamingDataFrame")
        key_func: Callable[[Any], Any]
        if isinstance(key, str):
            name = name or key
            key_func = operator.itemgetter(key)
        elif callable(key):
            if not name:
                raise ValueError("group_by() with a callable key needs a name")
            key_func = key
        else:
            raise TypeError(f"group_by() key must be a column name or a callable, got {type(key).__name__}")
        # Quix Streams 3.28: a stream of one partition needs no repartition topic (every key lands
        # in that partition anyway): the records are re-keyed in place, under a stream id of their own.
        if self._topic_manager.stream_topic_config(self._stream_id).num_partitions == 1:
            return self._regroup_in_place(name, key_func)
        topic = self._topic_manager.repartition_topic(
            operation=name, stream_id=self._stream_id, value_deserializer=value_deserializer,
            key_deserializer=key_deserializer, value_serializer=value_serializer, key_serializer=key_serializer)
        self._stream = self._stream.add_function(ToTopicFunction(self._processing_context.topic_output, topic, key_func, internal=True))
        grouped = StreamingDataFrame(topic, topic_manager=self._topic_manager, registry=self._registry,
                                     processing_context=self._processing_context)
        grouped._grouped = True
        self._registry.register_groupby(source_sdf=self, new_sdf=grouped)
        return grouped

    def _regroup_in_place(self, name: str, key_func: Callable[[Any], Any]) -> "StreamingDataFrame":
        """group_by on one partition: the same topics, each record keyed by ``key_func(value)``;
        state and changelogs of the result are named after ``<stream id>--groupby--<name>``."""
        stream = self._stream.add_transform(lambda value, key, timestamp, headers:
                                            (value, key_func(value), timestamp, headers))
        grouped = StreamingDataFrame(*self._topics, topic_manager=self._topic_manager, registry=self._registry,
                                     processing_context=self._processing_context, stream=stream,
                                     stream_id=f"{self._stream_id}--groupby--{name}")
        grouped._grouped = True
        self._registry.register_groupby(source_sdf=self, new_sdf=grouped, new_root=False)
        return grouped

    def sink(self, sink: Any) -> None:
        """Send every record to ``sink`` (a BaseSink); flushed at each checkpoint. Terminal."""
        ctx = self._processing_context
        ctx.register_sink(sink)
        cursor = ctx.cursor  # the loop moves it; read per message

        if _positional_add(sink):
            def _sink(value, key, timestamp, headers):
                msg = cursor.message
                sink.add(value, key, timestamp, headers, msg.topic(), msg.partition(), msg.offset())
        else:
            def _sink(value, key, timestamp, headers):
                msg = cursor.message
                sink.add(value=value, key=key, timestamp=timestamp, headers=headers,
                         topic=msg.topic(), partition=msg.partition(), offset=msg.offset())
        # A sink is a branch of its own: operations added later to this dataframe are siblings.
        self._stream.add_update(_sink, metadata=True)

    # -- windows (implemented in stream_edge.dataframe.windows) -------------------------------
    def _window_definition(self, *names: str):
        from stream_edge.dataframe.windows import definitions
        for name in names:
            cls = getattr(definitions, name, None)
            if cls is not None:
                return cls
        raise ImportError(f"stream_edge.dataframe.windows.definitions has none of {names}")

    def tumbling_window(self, duration_ms: Union[int, timedelta], grace_ms: Union[int, timedelta] = 0,
                        name: Optional[str] = None, on_late: Optional[Callable[..., Any]] = None,
                        before_update: Optional[Callable[..., Any]] = None,
                        after_update: Optional[Callable[..., Any]] = None):
        """Tumbling (fixed, non-overlapping) windows per message key; ``before_update`` /
        ``after_update(aggregated, value, key, timestamp, headers)`` returning True expire a window early."""
        cls = self._window_definition("TumblingTimeWindowDefinition", "TumblingWindowDefinition")
        if before_update is not None or after_update is not None:
            from stream_edge.dataframe.windows.early_expiration import early_expiring

            return early_expiring(cls, before_update, after_update, duration_ms=_ms(duration_ms),
                                  grace_ms=_ms(grace_ms), dataframe=self, name=name, on_late=on_late)
        return cls(duration_ms=_ms(duration_ms), grace_ms=_ms(grace_ms), dataframe=self, name=name, on_late=on_late)

    def hopping_window(self, duration_ms: Union[int, timedelta], step_ms: Union[int, timedelta],
                       grace_ms: Union[int, timedelta] = 0, name: Optional[str] = None,
                       on_late: Optional[Callable[..., Any]] = None, before_update: Optional[Callable[..., Any]] = None,
                       after_update: Optional[Callable[..., Any]] = None):
        """Hopping (overlapping, fixed step) windows per message key; ``before_update`` /
        ``after_update`` as for :meth:`tumbling_window`."""
        cls = self._window_definition("HoppingTimeWindowDefinition", "HoppingWindowDefinition")
        if before_update is not None or after_update is not None:
            from stream_edge.dataframe.windows.early_expiration import early_expiring

            return early_expiring(cls, before_update, after_update, duration_ms=_ms(duration_ms),
                                  grace_ms=_ms(grace_ms), dataframe=self, name=name, step_ms=_ms(step_ms),
                                  on_late=on_late)
        return cls(duration_ms=_ms(duration_ms), grace_ms=_ms(grace_ms), dataframe=self, name=name,
                   step_ms=_ms(step_ms), on_late=on_late)

    def sliding_window(self, duration_ms: Union[int, timedelta], grace_ms: Union[int, timedelta] = 0,
                       name: Optional[str] = None, on_late: Optional[Callable[..., Any]] = None):
        """Sliding windows (both ends inclusive) per message key."""
        cls = self._window_definition("SlidingTimeWindowDefinition", "SlidingWindowDefinition")
        return cls(duration_ms=_ms(duration_ms), grace_ms=_ms(grace_ms), dataframe=self, name=name, on_late=on_late)

    def tumbling_count_window(self, count: int, name: Optional[str] = None):
        """Windows of ``count`` messages per key, one after the other.

        Example: ``sdf.tumbling_count_window(10).agg(avg=Mean("temp")).final()``
        """
        from stream_edge.dataframe.windows.definitions import TumblingCountWindowDefinition

        return TumblingCountWindowDefinition(count, dataframe=self, name=name)

    def hopping_count_window(self, count: int, step: int, name: Optional[str] = None):
        """Windows of ``count`` messages per key, a new one every ``step`` messages."""
        from stream_edge.dataframe.windows.definitions import HoppingCountWindowDefinition

        return HoppingCountWindowDefinition(count, step, dataframe=self, name=name)

    def sliding_count_window(self, count: int, name: Optional[str] = None):
        """The last ``count`` messages of each key, at every message."""
        from stream_edge.dataframe.windows.definitions import SlidingCountWindowDefinition

        return SlidingCountWindowDefinition(count, dataframe=self, name=name)

    def session_window(self, inactivity_gap_ms: Union[int, timedelta], grace_ms: Union[int, timedelta] = 0,
                       name: Optional[str] = None, on_late: Optional[Callable[..., Any]] = None):
        """Sessions per key: a session lasts while messages keep coming at most ``inactivity_gap_ms``
        apart (event time); it closes ``grace_ms`` after that.

        Example: ``sdf.session_window(timedelta(minutes=5)).agg(clicks=Count()).final()``
        """
        from stream_edge.dataframe.windows.definitions import SessionWindowDefinition

        return SessionWindowDefinition(inactivity_gap_ms, grace_ms, dataframe=self, name=name, on_late=on_late)

    # -- joins (implemented in stream_edge.dataframe.joins) -----------------------------------
    def join_asof(self, right: "StreamingDataFrame", how: str = "inner", on_merge: Any = "raise",
                  grace_ms: Union[int, timedelta] = timedelta(days=7), name: Optional[str] = None) -> "StreamingDataFrame":
        """Join each record with the latest record of ``right`` with the same key and a timestamp
        ``<=`` its own (``how``: "inner" or "left"; see docs/joins.md).

        Example: ``sdf = measurements.join_asof(metadata, how="left", grace_ms=timedelta(days=14))``
        """
        from stream_edge.dataframe.joins import JoinAsOf

        return JoinAsOf(how=how, on_merge=on_merge, grace_ms=grace_ms, store_name=name).join(self, right)  # type: ignore[arg-type]

    def join_interval(self, right: "StreamingDataFrame", how: str = "inner", on_merge: Any = "raise",
                      grace_ms: Union[int, timedelta] = timedelta(days=7), name: Optional[str] = None,
                      backward_ms: Union[int, timedelta] = 0, forward_ms: Union[int, timedelta] = 0) -> "StreamingDataFrame":
        """Join records of both sides with the same key whose timestamps are at most ``backward_ms``
        / ``forward_ms`` apart (``how``: "inner", "left", "right", "outer"; see docs/joins.md).

        Example: ``sdf = measurements.join_interval(events, backward_ms=60_000, forward_ms=60_000)``
        """
        from stream_edge.dataframe.joins import IntervalJoin

        return IntervalJoin(how=how, on_merge=on_merge, grace_ms=grace_ms, store_name=name,  # type: ignore[arg-type]
                            backward_ms=backward_ms, forward_ms=forward_ms).join(self, right)

    def join_lookup(self, lookup: Any, fields: Dict[str, Any], on: Any = None, buffer: Any = None) -> "StreamingDataFrame":
        """Enrich each value in place with ``fields`` looked up in ``lookup`` by ``on`` (a column, a
        callable ``(value, key)``, or the message key); e.g. ``SQLiteLookup`` (see docs/joins.md)."""
        if buffer is not None:
            # Refused rather than ignored: a LookupBuffer changes when lookups happen.
            raise NotImplementedError("join_lookup(buffer=...) is not supported by stream_edge: leave buffer out "
                                      "(each record is looked up as it is processed)")
        from stream_edge.dataframe.joins import LookupJoin

        return LookupJoin(lookup, fields, on).join(self)

    def concat(self, other: "StreamingDataFrame") -> "StreamingDataFrame":
        """A new dataframe receiving the records of this one and of ``other`` (another topic's,
        processed in timestamp order, or another branch of the same topic).

        Example: ``merged = eu_readings.concat(us_readings)``
        """
        from .concat import concat_dataframes

        if not isinstance(other, StreamingDataFrame):
            raise TypeError(f"concat() needs a StreamingDataFrame, got {type(other).__name__}")
        return concat_dataframes(self, other)

    # -- columns ------------------------------------------------------------------------------
    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return StreamingSeries(sdf_id=id(self), name=item)
        if isinstance(item, StreamingSeries):
            simple = item.compose_simple()
            if simple is not None:
                return self.filter(simple)
            return self.filter(item.compose_value(), metadata=True)
        if isinstance(item, (list, tuple)):
            cols = list(item)
            return self.apply(lambda value: {col: value[col] for col in cols})
        if isinstance(item, StreamingDataFrame):
            # sdf[sdf.apply(predicate)]: filter by the result of another branch of this dataframe
            return self.filter(self._stream.diff(item.stream).compose_value(), metadata=True)
        raise TypeError(f"unsupported column reference {item!r}")

    def __setitem__(self, column: str, item: Any) -> None:
        if isinstance(item, StreamingSeries):
            if item.sdf_id is not None and item.sdf_id != id(self):
                raise InvalidOperation("Column-setting operations must originate from target SDF; "
                                       'ex: `sdf1["x"] = sdf1["y"] + 1`, NOT `sdf1["x"] = sdf2["y"] + 1` ')
            simple = item.compose_simple()
            if simple is not None:
                self._stream = self._stream.add_function(AssignFunction(column, simple))
            else:
                returning = item.compose_value()

                def assign_meta(value, key, timestamp, headers):
                    value[column] = returning(value, key, timestamp, headers)
                self.update(assign_meta, metadata=True)
        elif isinstance(item, StreamingDataFrame):
            # sdf["col"] = sdf.apply(func): the result of the other branch becomes a column
            returning_sdf = self._stream.diff(item.stream).compose_value()

            def assign_result(value, key, timestamp, headers):
                value[column] = returning_sdf(value, key, timestamp, headers)
            self.update(assign_result, metadata=True)
        else:
            def assign_const(value):
                value[column] = item
            self.update(assign_const)

    def __bool__(self) -> bool:
        raise InvalidOperation(f"Cannot assess truth level of a {type(self).__name__} using 'bool()' or any "
                               "operations that rely on it; use '&' or '|' for logical and/or comparisons")

    # -- execution ----------------------------------------------------------------------------
    def compose(self, sink: Optional[Callable[[Any, Any, int, Any], None]] = None) -> Dict[str, VoidExecutor]:
        """Compose every registered topic's operations into one closure each: ``{topic: executor}``."""
        return self._registry.compose_all(sink=sink)

    def test(self, value: Any, key: Any = b"key", timestamp: int = 0, headers: Optional[Any] = None,
             ctx: Any = None, topic: Optional["Topic"] = None) -> List[Any]:
        """Run one record through the pipeline; return ``[(value, key, timestamp, headers), ...]``.

        >>> # sdf.test({"x": 1}, key=b"k", timestamp=0) -> [({"x": 1}, b"k", 0, None)]
        """
        from .one_record import run_one

        return run_one(self, self._registry, value, key, timestamp, headers, ctx, topic or self.topic)

    def __repr__(self) -> str:
        return f"StreamingDataFrame(topic={self.topic.name!r})"

"""``ListSink``: a sink that is a list, for debugging and tests (Quix Streams 3.x API).

Example::

    from stream_edge import Application
    from stream_edge.sinks.core.list import ListSink

    app = Application(broker_address="localhost:9092", auto_offset_reset="earliest")
    sink = ListSink()
    app.dataframe(app.topic("events")).sink(sink)
    app.run(timeout=5)
    print(sink)        # [{'x': 1}, {'x': 2}]
"""

from __future__ import annotations

from collections import UserList
from typing import Any, Optional

from stream_edge.sinks.base.item import HeadersTuples
from stream_edge.sinks.base.sink import BaseSink

__all__ = ("ListSink",)


class ListSink(BaseSink, UserList):
    """A list-like sink: every record handed to it is appended as it is processed.

    Dict values are appended as they are (the same object); any other value is wrapped as
    ``{"value": value}``. With ``metadata=True`` each record becomes a new dict starting with
    ``_key``, ``_timestamp``, ``_headers``, ``_topic``, ``_partition`` and ``_offset``, followed by
    the value's own fields (which win on a name clash).

    :param args: an optional initial iterable, as for ``list``.
    :param metadata: prefix every record with the message metadata.
    """

    def __init__(self, *args: Any, metadata: bool = False) -> None:
        BaseSink.__init__(self)
        UserList.__init__(self, *args)
        self._metadata = metadata

    def add(self, value: Any, key: Any, timestamp: int, headers: HeadersTuples,
            topic: str, partition: int, offset: int) -> None:
        """Append one record (see the class docstring for its shape)."""
        if not isinstance(value, dict):
            value = {"value": value}
        if self._metadata:
            value = {"_key": key, "_timestamp": timestamp, "_headers": headers, "_topic": topic,
                     "_partition": partition, "_offset": offset, **value}
        self.data.append(value)

    def flush(self, topic: Optional[str] = None, partition: Optional[int] = None) -> None:
        """Nothing to write: records are in the list as soon as they are added."""

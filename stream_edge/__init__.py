"""stream_edge: a light stream processor with the Quix Streams 3.x API.

Replace ``quixstreams`` with ``stream_edge`` in a Quix Streams 3.x program's imports::

    from stream_edge import Application

    app = Application(broker_address="localhost:9092", consumer_group="demo")
    sdf = app.dataframe(app.topic("input"))
    sdf = sdf.filter(lambda v: v["temperature"] > 20)
    sdf.to_topic(app.topic("output"))
    app.run()

Every public name resolves lazily, so importing a pure submodule (``stream_edge.lake``, the
window engines) never pulls in the Kafka client, RocksDB or the runtime.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Everything resolves on first use: the pure parts (window engines, lake layout) are imported by
# Spark workers that have no Kafka client installed.
_LAZY = {
    "MessageContext": ("stream_edge.models.messagecontext", "MessageContext"),
    "message_context": ("stream_edge.context", "message_context"),
    "set_message_context": ("stream_edge.context", "set_message_context"),
    "Application": ("stream_edge.app", "Application"),
    "ApplicationConfig": ("stream_edge.app", "ApplicationConfig"),
    "State": ("stream_edge.state", "State"),
    "StreamingDataFrame": ("stream_edge.dataframe", "StreamingDataFrame"),
    "StreamingSeries": ("stream_edge.dataframe", "StreamingSeries"),
    "is_outage": ("stream_edge.errors", "is_outage"),
    "OutageError": ("stream_edge.errors", "OutageError"),
}

__all__ = ("Application", "ApplicationConfig", "MessageContext", "State", "StreamingDataFrame",
           "StreamingSeries", "message_context", "set_message_context", "is_outage", "OutageError", "__version__")


def __getattr__(name: str) -> Any:
    try:
        module_name, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'stream_edge' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module_name), attr)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY))

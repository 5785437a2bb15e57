"""How state keys and values become bytes (RocksDB, memory store and changelog share it).

Values use ``RocksDBOptions.dumps/loads`` (JSON through orjson by default). A message key becomes
its state prefix: bytes as they are, ``str`` UTF-8 encoded, anything else JSON (the same rule as
``StreamingDataFrame``'s stateful functions).

Example::

    >>> encode_state_key(b"sensor-1", "count", default_dumps)
    b'sensor-1|"count"'
"""

from __future__ import annotations

from typing import Any, Callable

import orjson

__all__ = ("default_dumps", "default_loads", "message_key_bytes", "encode_state_key", "SEPARATOR")

SEPARATOR = b"|"
_OPTS = orjson.OPT_NON_STR_KEYS


def default_dumps(value: Any) -> bytes:
    """JSON bytes (orjson; non-string dict keys allowed)."""
    return orjson.dumps(value, option=_OPTS)


def default_loads(data: bytes) -> Any:
    return orjson.loads(data)


def message_key_bytes(key: Any) -> bytes:
    """The state prefix of a message key."""
    if type(key) is bytes:
        return key
    if type(key) is str:
        return key.encode()
    return orjson.dumps(key, option=_OPTS)


def encode_state_key(prefix: bytes, key: Any, dumps: Callable[[Any], bytes]) -> bytes:
    """``prefix|dumps(key)``: keys of one message key sort together."""
    return prefix + SEPARATOR + dumps(key)

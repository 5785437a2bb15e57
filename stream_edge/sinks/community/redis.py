"""``RedisSink``: processed records as Redis string keys (Quix Streams 3.x API).

A batching sink: at each checkpoint the partition's records are written in one ``MULTI``/``EXEC``
transaction (``MSET`` in chunks), so a batch lands entirely or not at all; the last record per key
wins, and a replay after a crash writes the same keys again (no duplicates). A server that refuses
the write (out of memory, loading, read-only replica, busy script) or does not answer within
``socket_timeout`` raises :class:`SinkBackpressureError`: the partition pauses and is replayed.

Needs the ``edge-redis`` extra (``pip install streaming-lakehouse[edge-redis]``); this module
imports without it.

Example::

    from stream_edge.sinks.community.redis import RedisSink

    sink = RedisSink(host="127.0.0.1", port=6379, db=0)
    sdf.sink(sink)     # SET <message key> <json of the value>
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, List, Optional, Union

from stream_edge.exceptions import QuixException
from stream_edge.sinks.base.batch import SinkBatch
from stream_edge.sinks.base.exceptions import SinkBackpressureError
from stream_edge.sinks.base.item import SinkItem
from stream_edge.sinks.base.sink import (
    BatchingSink,
    ClientConnectFailureCallback,
    ClientConnectSuccessCallback,
)

__all__ = ("RedisSink", "RedisSinkException")

logger = logging.getLogger(__name__)

_EXTRA = "pip install streaming-lakehouse[edge-redis]"
# Error replies that mean "not now" rather than "never": the write is retried later.
_TRANSIENT_ERRORS = ("ConnectionError", "TimeoutError", "OutOfMemoryError", "ReadOnlyError", "BusyLoadingError",
                     "TryAgainError", "MasterDownError", "ClusterDownError", "MaxConnectionsError")
_TRANSIENT_REPLIES = ("OOM", "BUSY", "LOADING", "MISCONF", "READONLY", "TRYAGAIN", "MASTERDOWN",
                      "NOREPLICAS", "CLUSTERDOWN")
_CHUNK = 1000


class RedisSinkException(QuixException):
    """A record the sink cannot write (its key or value does not serialize)."""


def _redis() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ImportError(f"RedisSink needs the 'redis' package: {_EXTRA}") from exc
    return redis


def _where(item: SinkItem, topic: str, partition: int) -> str:
    return f"topic '{topic}' partition {partition} offset {item.offset}"


def _transient(exc: BaseException) -> bool:
    """Whether a redis-py error means the server cannot take the write now."""
    errors = _redis().exceptions
    kinds = tuple(getattr(errors, name) for name in _TRANSIENT_ERRORS if hasattr(errors, name))
    if isinstance(exc, kinds):
        return True
    # A reply redis-py has no class for: "Command # n (...) of pipeline caused error: BUSY ...".
    reply = str(exc).split("caused error: ", 1)[-1]
    return isinstance(exc, errors.ResponseError) and reply.startswith(_TRANSIENT_REPLIES)


class RedisSink(BatchingSink):
    """Writes every record as ``SET key value`` (the batch in one transaction).

    :param host: Redis host. :param port: Redis port. :param db: database number.
    :param value_serializer: value -> ``str``/``bytes`` (default ``json.dumps``).
    :param key_serializer: optional ``(key, value) -> str/bytes``; without it the message key is
        used as it is (it must then be ``str`` or ``bytes``).
    :param password: optional password.
    :param socket_timeout: seconds to wait for the server; longer is backpressure.
    :param on_client_connect_success: called after the server answered the first ``PING``.
    :param on_client_connect_failure: called with the exception when it did not.
    :param backpressure_retry_seconds: pause before a refused write is retried (edge extension).
    :param kwargs: more arguments for ``redis.Redis``.
    """

    def __init__(
        self,
        host: str,
        port: int,
        db: int,
        value_serializer: Callable[[Any], Union[bytes, str]] = json.dumps,
        key_serializer: Optional[Callable[[Any, Any], Union[bytes, str]]] = None,
        password: Optional[str] = None,
        socket_timeout: float = 30.0,
        on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
        on_client_connect_failure: Optional[ClientConnectFailureCallback] = None,
        backpressure_retry_seconds: float = 5.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(on_client_connect_success, on_client_connect_failure)
        redis = _redis()
        self._client = redis.Redis(host=host, port=port, db=db, password=password,
                                   socket_timeout=socket_timeout, **kwargs)
        self._value_serializer = value_serializer
        self._key_serializer = key_serializer
        self.backpressure_retry_seconds = backpressure_retry_seconds

    def setup(self) -> None:
        """Check the server answers (``PING``)."""
        self._client.ping()

    def cleanup(self) -> None:
        """Close the connection pool."""
        self._client.close()

    def _pairs(self, batch: SinkBatch) -> List[Any]:
        """``[key, value, key, value, ...]`` of the batch, each checked."""
        flat: List[Any] = []
        key_serializer, value_serializer = self._key_serializer, self._value_serializer
        for item in batch:
            field = "key"
            try:
                key = item.key if key_serializer is None else key_serializer(item.key, item.value)
                if not isinstance(key, (str, bytes)):
                    raise TypeError(f"the key is {type(key).__name__} {key!r}, not str or bytes"
                                    + ("" if key_serializer else " (set key_serializer)"))
                field = "value"
                value = value_serializer(item.value)
                if not isinstance(value, (str, bytes)):
                    raise TypeError(f"value_serializer returned {type(value).__name__}, not str or bytes")
            except Exception as exc:
                raise RedisSinkException(f"RedisSink cannot write the {field} of "
                                         f"{_where(item, batch.topic, batch.partition)}: {exc}") from exc
            flat.append(key)
            flat.append(value)
        return flat

    def write(self, batch: SinkBatch) -> None:
        """Write the batch in one ``MULTI``/``EXEC`` transaction; see the class docstring."""
        flat = self._pairs(batch)
        redis = _redis()
        step = 2 * _CHUNK
        try:
            with self._client.pipeline(transaction=True) as pipe:
                for start in range(0, len(flat), step):
                    pipe.execute_command("MSET", *flat[start:start + step])
                pipe.execute(raise_on_error=True)
        except redis.exceptions.RedisError as exc:
            if not _transient(exc):
                raise
            logger.warning("Redis refused the write of %s[%s] (%s); retrying in %ss",
                           batch.topic, batch.partition, exc, self.backpressure_retry_seconds)
            raise SinkBackpressureError(self.backpressure_retry_seconds, batch.topic, batch.partition) from exc

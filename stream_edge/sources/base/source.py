"""The v3 Source contract: BaseSource (start/stop/default_topic), Source (run loop helpers) and
StatefulSource (a key-value state kept in a changelog topic).

As in Quix Streams, each source runs in its own process (:mod:`stream_edge.sources.base.process`):
``configure()``, ``setup()`` and ``start()`` are called there, ``default_topic()`` in the
application's process. ``start()`` runs until done or until ``stop()`` is called.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING, Any, Optional, Union

from stream_edge.client_connect import ClientConnectFailureCallback, ClientConnectSuccessCallback, connect
from stream_edge.models.topics import KafkaMessage, Topic
from stream_edge.state.base.state import State

if TYPE_CHECKING:  # pragma: no cover
    from .state import SourceStore, SourceTransaction

__all__ = ("BaseSource", "Source", "StatefulSource", "ClientConnectSuccessCallback",
           "ClientConnectFailureCallback")

logger = logging.getLogger("stream_edge")



class BaseSource(abc.ABC):
    """The minimal interface: ``start()``, ``stop()``, ``default_topic()``.

    Example::

        class Numbers(BaseSource):
            def start(self):
                self._running = True
                for i in range(10):
                    if not self._running:
                        break
                    msg = self._producer_topic.serialize(key=str(i).encode(), value=i)
                    self._producer.produce(topic=self._producer_topic.name, value=msg.value, key=msg.key)
                self._producer.flush()
            def stop(self): self._running = False
            def default_topic(self): return Topic("numbers", value_serializer="json", value_deserializer="json")
    """

    shutdown_timeout: float = 10

    def __init__(self, on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        self._producer: Any = None
        self._producer_topic: Optional[Topic] = None
        self._configured = False
        self._on_client_connect_success = on_client_connect_success
        self._on_client_connect_failure = on_client_connect_failure

    def configure(self, topic: Topic, producer: Any, **kwargs: Any) -> None:
        """Called in the source's process before start(): the topic to produce to and a producer."""
        self._producer_topic = topic
        self._producer = producer
        self._configured = True

    @property
    def producer(self) -> Any:
        """The source's producer (set by configure())."""
        return self._producer

    @property
    def producer_topic(self) -> Optional[Topic]:
        """The topic the source produces to (set by configure())."""
        return self._producer_topic

    def setup(self) -> None:
        """Connect and check the client here (called before start(), in the source's process)."""

    def init_client(self) -> None:
        """Connect before ``start()``: what the source's process calls. It runs Quix Streams'
        ``_init_client`` (setup(), then the connect callbacks), which a subclass may override."""
        self._init_client()

    def _init_client(self) -> None:
        """setup(), then the connect callbacks; a failure callback must handle or re-raise."""
        connect(self.setup, self._on_client_connect_success, self._on_client_connect_failure)

    @abc.abstractmethod
    def start(self) -> None:
        """Fetch data and produce it; returns when done or stopped."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Make start() return soon."""

    @abc.abstractmethod
    def default_topic(self) -> Topic:
        """The topic to use when none is given (the Application prefixes its name with "source__")."""


class Source(BaseSource):
    """A base for custom sources: implement ``run()`` and loop while ``self.running``.

    Example::

        class Counter(Source):
            def run(self):
                i = 0
                while self.running and i < 100:
                    msg = self.serialize(key=str(i), value={"i": i})
                    self.produce(key=msg.key, value=msg.value)
                    i += 1

        sdf = app.dataframe(source=Counter(name="counter"))
    """

    def __init__(self, name: str, shutdown_timeout: float = 10,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        super().__init__(on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)
        self.name = name
        self.shutdown_timeout = shutdown_timeout
        self._running = False

    @property
    def running(self) -> bool:
        """False once stop() was called: run() should return soon."""
        return self._running

    def start(self) -> None:
        """Run ``run()``, then ``cleanup()``."""
        self._running = True
        failed = False
        try:
            self.run()
        except BaseException:
            failed = True
            raise
        finally:
            self._running = False
            self.cleanup(failed)

    def stop(self) -> None:
        """Set ``running`` to False."""
        self._running = False

    def cleanup(self, failed: bool) -> None:
        """After run(): flush the producer unless run() failed."""
        if not failed and self._producer is not None:
            self.flush()

    def _configured_topic(self) -> Topic:
        if self._producer_topic is None:
            raise RuntimeError(f"source {self!r} is not configured: add it to an Application "
                               f"(app.add_source() or app.dataframe(source=...)) first")
        return self._producer_topic

    @abc.abstractmethod
    def run(self) -> None:
        """Fetch data and produce it while ``self.running``."""

    def serialize(self, key: Optional[object] = None, value: Optional[object] = None,
                  headers: Any = None, timestamp_ms: Optional[int] = None) -> KafkaMessage:
        """Serialize with the source topic's serializers (a ``str`` key passes a bytes serializer,
        as in Quix Streams: the producer encodes it)."""
        topic = self._configured_topic()
        if isinstance(key, str) and getattr(topic.key_serializer, "passthrough", False):
            msg = topic.serialize(key=None, value=value, headers=headers, timestamp_ms=timestamp_ms)
            return KafkaMessage(key=key, value=msg.value, headers=msg.headers, timestamp=msg.timestamp)
        return topic.serialize(key=key, value=value, headers=headers, timestamp_ms=timestamp_ms)

    def produce(self, value: Optional[Union[str, bytes]] = None, key: Optional[Union[str, bytes]] = None,
                headers: Any = None, partition: Optional[int] = None, timestamp: Optional[int] = None,
                poll_timeout: float = 30.0, buffer_error_max_tries: int = 10) -> None:
        """Produce raw bytes to the source topic."""
        self._producer.produce(topic=self._configured_topic().name, value=value, key=key, headers=headers,
                               partition=partition, timestamp=timestamp, poll_timeout=poll_timeout,
                               buffer_error_max_tries=buffer_error_max_tries)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Deliver everything produced so far (raises if something could not be delivered)."""
        self._producer.flush(timeout)

    def default_topic(self) -> Topic:
        """A JSON-valued, bytes-keyed topic named after the source."""
        return Topic(name=self.name, value_deserializer="json", value_serializer="json",
                     key_deserializer="bytes", key_serializer="bytes")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class StatefulSource(Source):
    """A Source with a key-value ``state`` that survives restarts.

    The state lives in memory and in a compacted changelog topic
    (``changelog__<consumer group>--source-<name>``); the source's process recovers it from there
    before ``run()``. ``flush()`` delivers what was produced, then commits the state changes made
    since the last flush; changes not flushed are lost on a crash, so the source resumes from its
    last flush (at-least-once).

    Example::

        class Counter(StatefulSource):
            def run(self):
                i = self.state.get("next", 0)
                while self.running:
                    msg = self.serialize(key=str(i), value={"i": i})
                    self.produce(key=msg.key, value=msg.value)
                    i += 1
                    self.state.set("next", i)
                    if i % 100 == 0:
                        self.flush()
    """

    def __init__(self, name: str, shutdown_timeout: float = 10,
                 on_client_connect_success: Optional[ClientConnectSuccessCallback] = None,
                 on_client_connect_failure: Optional[ClientConnectFailureCallback] = None) -> None:
        super().__init__(name=name, shutdown_timeout=shutdown_timeout,
                         on_client_connect_success=on_client_connect_success,
                         on_client_connect_failure=on_client_connect_failure)
        self._store: Optional["SourceStore"] = None
        self._transaction: Optional["SourceTransaction"] = None
        self._state: Optional[State] = None

    def configure(self, topic: Topic, producer: Any, *, store_partition: Optional["SourceStore"] = None,
                  **kwargs: Any) -> None:
        """Called in the source's process: the topic, the producer and the recovered store."""
        super().configure(topic, producer, **kwargs)
        self._store = store_partition
        self._transaction = None
        self._state = None

    @property
    def store_partitions_count(self) -> int:
        """Partitions of the changelog topic (one)."""
        return 1

    @property
    def assigned_store_partition(self) -> int:
        """The store partition of this source (0)."""
        return 0

    @property
    def store_name(self) -> str:
        """The store's name, ``source-<name>``; it names the changelog topic."""
        return f"source-{self.name}"

    @property
    def state(self) -> State:
        """The source's state. Valid until the next ``flush()``: read the property again after it."""
        if self._store is None:
            raise RuntimeError(f"source {self!r} has no state store: it is available once the application "
                               f"runs the source")
        if self._state is None or self._transaction is None or self._transaction.completed:
            self._transaction = self._store.begin()
            self._state = self._transaction.as_state()
        return self._state

    def flush(self, timeout: Optional[float] = None) -> None:
        """Deliver what was produced, then commit the state changes to the changelog topic."""
        super().flush(timeout)
        if self._transaction is not None:
            self._transaction.commit(self._producer, timeout)
        self._transaction = None
        self._state = None

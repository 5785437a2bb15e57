"""The v3 Source contract: BaseSource (start/stop/default_topic) and Source (run loop helpers).

stream_edge runs each source in a thread of the application process (Quix Streams uses a
subprocess); the contract is the same: ``start()`` runs until done or until ``stop()`` is called.
"""

from __future__ import annotations

import abc
import logging
from typing import Any, Optional, Union

from stream_edge.models.topics import KafkaMessage, Topic

__all__ = ("BaseSource", "Source")

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
                    msg = self._producer_topic.serialize(key=str(i), value=i)
                    self._producer.produce(self._producer_topic.name, msg.value, msg.key)
                self._producer.flush()
            def stop(self): self._running = False
            def default_topic(self): return Topic("numbers", value_serializer="json", value_deserializer="json")
    """

    def __init__(self) -> None:
        self._producer: Any = None
        self._producer_topic: Optional[Topic] = None
        self._configured = False

    def configure(self, topic: Topic, producer: Any, **kwargs: Any) -> None:
        """Called before start(): the topic to produce to and a producer."""
        self._producer_topic = topic
        self._producer = producer
        self._configured = True

    @property
    def producer_topic(self) -> Optional[Topic]:
        return self._producer_topic

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

    def __init__(self, name: str, shutdown_timeout: float = 10) -> None:
        super().__init__()
        self.name = name
        self.shutdown_timeout = shutdown_timeout
        self._running = False

    @property
    def running(self) -> bool:
        return self._running

    def start(self) -> None:
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
        """Serialize with the source topic's serializers."""
        return self._configured_topic().serialize(key=key, value=value, headers=headers, timestamp_ms=timestamp_ms)

    def produce(self, value: Optional[Union[str, bytes]] = None, key: Optional[Union[str, bytes]] = None,
                headers: Any = None, partition: Optional[int] = None, timestamp: Optional[int] = None,
                poll_timeout: float = 5.0, buffer_error_max_tries: int = 3) -> None:
        """Produce raw bytes to the source topic."""
        self._producer.produce(topic=self._configured_topic().name, value=value, key=key, headers=headers,
                               partition=partition, timestamp=timestamp, poll_timeout=poll_timeout,
                               buffer_error_max_tries=buffer_error_max_tries)

    def flush(self, timeout: Optional[float] = None) -> None:
        """Deliver everything produced so far."""
        self._producer.flush(timeout)

    def default_topic(self) -> Topic:
        return Topic(name=self.name, value_deserializer="json", value_serializer="json",
                     key_deserializer="bytes", key_serializer="bytes")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

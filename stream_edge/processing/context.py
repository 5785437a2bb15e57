"""ProcessingContext: what the Application shares with every StreamingDataFrame.

The processing loop stores the current raw Kafka message in ``current_message`` (one attribute
store per message); ``topic``/``partition``/``offset`` read it on demand, so no per-message
context object is built unless a callback asks for it (see ``stream_edge.context``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.checkpointing import Checkpoint
    from stream_edge.models.topics import Topic
    from stream_edge.processing.pausing import PausingManager
    from stream_edge.rowconsumer import RowConsumer
    from stream_edge.rowproducer import RowProducer, TopicOutput
    from stream_edge.sinks.base.manager import SinkManager
    from stream_edge.sinks.base.sink import BaseSink
    from stream_edge.state import PartitionTransaction, StateStoreManager

__all__ = ("ProcessingContext", "CheckpointDriver")


class CheckpointDriver(Protocol):
    """What drives checkpoints while an Application runs (its Runner)."""

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``), then start a new one."""

    def start_checkpoint(self) -> None:
        """Drop the current (uncommitted) checkpoint and start a new one."""


@dataclass
class ProcessingContext:
    """Shared processing objects: state manager, producer, checkpoint and the current message.

    Example::

        ctx = ProcessingContext()
        tx = ctx.get_transaction()          # transaction of the current message's partition
    """

    producer: Optional["RowProducer"] = None
    consumer: Optional["RowConsumer"] = None
    state_manager_factory: Optional[Callable[[], "StateStoreManager"]] = None
    sink_manager: Optional["SinkManager"] = None
    pausing_manager: Optional["PausingManager"] = None
    checkpoint: Optional["Checkpoint"] = None
    checkpoint_driver: Optional[CheckpointDriver] = None  # the running Application's Runner
    current_message: Any = None  # the confluent_kafka.Message (or look-alike) being processed
    _state_manager: Optional["StateStoreManager"] = field(default=None, repr=False)

    @property
    def state_manager(self) -> "StateStoreManager":
        """The StateStoreManager, created by the Application's factory on first use.

        Stateful operations and windows reach it at definition time to register their stores;
        an application without them never creates one.
        """
        if self._state_manager is None:
            if self.state_manager_factory is None:
                raise RuntimeError("no state manager: this context was created without a state manager factory")
            self._state_manager = self.state_manager_factory()
        return self._state_manager

    @state_manager.setter
    def state_manager(self, manager: Optional["StateStoreManager"]) -> None:
        self._state_manager = manager

    @property
    def existing_state_manager(self) -> Optional["StateStoreManager"]:
        """The state manager if one was created (asking creates none)."""
        return self._state_manager

    @property
    def has_state(self) -> bool:
        """True once a state manager exists (no manager is created by asking)."""
        return self._state_manager is not None

    def topic_output(self, topic: "Topic", key: Optional[Callable[[Any], Any]] = None) -> "TopicOutput":
        """How ``to_topic(topic, key)`` produces (asked when the pipeline is composed)."""
        if self.producer is None:
            from stream_edge.dataframe.exceptions import InvalidOperation

            raise InvalidOperation("to_topic() needs the Application's producer (use app.dataframe())")
        return self.producer.topic_output(topic, key)

    def register_sink(self, sink: "BaseSink") -> None:
        """Register a sink with the SinkManager (created on first use; owned by stream_edge.sinks)."""
        if self.sink_manager is None:
            from stream_edge.sinks.base.manager import SinkManager

            self.sink_manager = SinkManager()
        self.sink_manager.register(sink)

    @property
    def sinks(self) -> list:
        return self.sink_manager.sinks if self.sink_manager is not None else []

    @property
    def topic(self) -> Optional[str]:
        msg = self.current_message
        return None if msg is None else msg.topic()

    @property
    def partition(self) -> Optional[int]:
        msg = self.current_message
        return None if msg is None else msg.partition()

    @property
    def offset(self) -> Optional[int]:
        msg = self.current_message
        return None if msg is None else msg.offset()

    def get_transaction(self, store_name: str = "default", stream_id: Optional[str] = None) -> "PartitionTransaction":
        """The transaction of ``store_name`` of ``stream_id`` (default: the stream of the current
        message's topic) for the current message's partition. Operators hold a ``StoreRef``."""
        manager = self._state_manager
        if manager is None:
            raise RuntimeError("no state is configured: register a stateful operation first")
        msg = self.current_message
        if msg is None:
            raise RuntimeError("get_transaction() is only available while a message is processed")
        return manager.get_transaction(msg.topic() if stream_id is None else stream_id, msg.partition(), store_name)

    # v3 names, for code that drives checkpoints itself; the running Application's Runner does it
    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record a processed offset in the current checkpoint."""
        if self.checkpoint is None:
            raise RuntimeError("no checkpoint: the application is not running")
        self.checkpoint.store_offset(topic, partition, offset)

    def init_checkpoint(self) -> None:
        """Start a new checkpoint (the running Application's runner does it)."""
        self._driver().start_checkpoint()

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``), then start a new one."""
        self._driver().commit_checkpoint(force)

    def _driver(self) -> CheckpointDriver:
        if self.checkpoint_driver is None:
            raise RuntimeError("checkpoints are driven by a running Application")
        return self.checkpoint_driver

"""ProcessingContext: the definition-time topology the Application shares with every StreamingDataFrame.

It holds what a pipeline is built from (the producer outputs are made with, the state manager
stores register with, the sinks) and the :class:`~stream_edge.processing.cursor.MessageCursor`
the per-message loop moves; nothing outside this module assigns its attributes, and a run never
changes it (``tests/unit/runtime/test_context_ownership.py``). The running Runner is reached
through ``runner_lookup``, a function the Application passes in, for the v3
``commit_checkpoint``/``init_checkpoint``/``store_offset`` names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol

from stream_edge.processing.cursor import MessageCursor

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.models.topics import Topic
    from stream_edge.rowconsumer import RowConsumer
    from stream_edge.rowproducer import RowProducer, TopicOutput
    from stream_edge.sinks.base.manager import SinkManager
    from stream_edge.sinks.base.sink import BaseSink
    from stream_edge.state import StateStoreManager

__all__ = ("ProcessingContext", "CheckpointDriver")


class CheckpointDriver(Protocol):
    """What drives checkpoints while an Application runs (its Runner)."""

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``), then start a new one."""

    def start_checkpoint(self) -> None:
        """Drop the current (uncommitted) checkpoint and start a new one."""

    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record a processed offset in the current checkpoint."""


@dataclass
class ProcessingContext:
    """Shared definition-time objects: producer, state manager, sinks, and the message cursor.

    Example::

        ctx = ProcessingContext(producer=producer, state_manager_factory=make_state_manager)
        ref = ctx.state_manager.register_store("input")   # operators hold the StoreRef
        tx = ref.transaction(ctx.cursor.message.partition())
    """

    producer: Optional["RowProducer"] = None
    consumer: Optional["RowConsumer"] = None
    state_manager_factory: Optional[Callable[[], "StateStoreManager"]] = None
    # the running Application's Runner (None when not running); asked, never stored here
    runner_lookup: Callable[[], Optional[CheckpointDriver]] = field(default=lambda: None, repr=False)
    cursor: MessageCursor = field(default_factory=MessageCursor)  # one for the context's life
    _sink_manager: Optional["SinkManager"] = field(default=None, repr=False)
    _state_manager: Optional["StateStoreManager"] = field(default=None, repr=False)

    @property
    def current_message(self) -> Any:
        """The raw message being processed (the cursor's); operators hold the cursor itself."""
        return self.cursor.message

    @property
    def sink_manager(self) -> Optional["SinkManager"]:
        """The SinkManager, once a sink was registered."""
        return self._sink_manager

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
        if self._sink_manager is None:
            from stream_edge.sinks.base.manager import SinkManager

            self._sink_manager = SinkManager()
        self._sink_manager.register(sink)

    @property
    def sinks(self) -> list:
        return self._sink_manager.sinks if self._sink_manager is not None else []

    @property
    def topic(self) -> Optional[str]:
        return self.cursor.topic

    @property
    def partition(self) -> Optional[int]:
        return self.cursor.partition

    @property
    def offset(self) -> Optional[int]:
        return self.cursor.offset

    # v3 names, for code that drives checkpoints itself; the running Application's Runner does it
    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record a processed offset in the current checkpoint."""
        self._driver().store_offset(topic, partition, offset)

    def init_checkpoint(self) -> None:
        """Start a new checkpoint (the running Application's runner does it)."""
        self._driver().start_checkpoint()

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``), then start a new one."""
        self._driver().commit_checkpoint(force)

    def _driver(self) -> CheckpointDriver:
        driver = self.runner_lookup()
        if driver is None:
            raise RuntimeError("checkpoints are driven by a running Application")
        return driver

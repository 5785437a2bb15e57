"""ProcessingContext: what the Application shares with every StreamingDataFrame.

The processing loop stores the current raw Kafka message in ``current_message`` (one attribute
store per message); ``topic``/``partition``/``offset`` read it on demand, so no per-message
context object is built unless a callback asks for it (see ``stream_edge.context``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from stream_edge.state import PartitionTransaction, StateStoreManager

__all__ = ("ProcessingContext",)


class ProcessingContext:
    """Shared processing objects: state manager, producer, checkpoint and the current message.

    Example::

        ctx = ProcessingContext()
        tx = ctx.get_transaction()          # transaction of the current message's partition
    """

    def __init__(self, state_manager: Optional["StateStoreManager"] = None, producer: Any = None,
                 consumer: Any = None, sink_manager: Any = None, pausing_manager: Any = None,
                 checkpoint: Any = None, state_manager_factory: Optional[Callable[[], "StateStoreManager"]] = None) -> None:
        self.current_message: Any = None  # a confluent_kafka.Message (or look-alike) being processed
        self._state_manager = state_manager
        self._state_manager_factory = state_manager_factory
        self.producer = producer
        self.consumer = consumer
        self.sink_manager = sink_manager
        self.pausing_manager = pausing_manager
        self.checkpoint = checkpoint
        self.checkpoint_hook: Optional[Callable[..., None]] = None  # set by the runner

    @property
    def state_manager(self) -> Optional["StateStoreManager"]:
        """The StateStoreManager, created by the Application's factory on first use.

        Stateful operations and windows reach it at definition time to register their stores;
        an application without them never creates one.
        """
        if self._state_manager is None and self._state_manager_factory is not None:
            self._state_manager = self._state_manager_factory()
        return self._state_manager

    @state_manager.setter
    def state_manager(self, manager: Optional["StateStoreManager"]) -> None:
        self._state_manager = manager

    @property
    def has_state(self) -> bool:
        """True once a state manager exists (no manager is created by asking)."""
        return self._state_manager is not None

    def register_sink(self, sink: Any) -> None:
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

    def get_transaction(self, store_name: str = "default") -> "PartitionTransaction":
        """The state transaction of the current message's topic-partition."""
        manager = self._state_manager
        if manager is None:
            raise RuntimeError("no state is configured: register a stateful operation first")
        msg = self.current_message
        if msg is None:
            raise RuntimeError("get_transaction() is only available while a message is processed")
        return manager.get_transaction(msg.topic(), msg.partition(), store_name)

    # v3 names, for code that drives checkpoints itself; the running Application sets the hook
    def store_offset(self, topic: str, partition: int, offset: int) -> None:
        """Record a processed offset in the current checkpoint."""
        if self.checkpoint is None:
            raise RuntimeError("no checkpoint: the application is not running")
        self.checkpoint.store_offset(topic, partition, offset)

    def init_checkpoint(self) -> None:
        """Start a new checkpoint (the running Application's runner does it)."""
        self._checkpoint_hook(False, True)

    def commit_checkpoint(self, force: bool = False) -> None:
        """Commit the current checkpoint if it is due (or ``force``), then start a new one."""
        self._checkpoint_hook(force, False)

    def _checkpoint_hook(self, force: bool, only_new: bool) -> None:
        hook = self.checkpoint_hook
        if hook is None:
            raise RuntimeError("checkpoints are driven by a running Application")
        hook(force=force, only_new=only_new)

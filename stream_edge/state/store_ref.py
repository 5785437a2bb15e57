"""StoreRef: what registering a state store returns, and the one way to reach its transaction.

Stateful functions, windows and joins keep the reference they got at definition time and ask it
for the transaction of the partition being processed. The reference holds the manager's live
``{partition: transaction}`` map of its store (updated in place on assign and revoke), so the
per-message lookup is one dict access; a miss asks the manager, which raises the error that says
why (store not registered, partition not assigned).

A store belongs to a *stream* (``stream_id``): a dataframe's input topic, or the sorted names of
the topics a ``concat`` merged (``"left--right"``). Messages of every topic of the stream reach
the same store partition (the topics are co-partitioned: partition ``p`` of each).

Example::

    ref = manager.register_store("input")            # in a dataframe: at definition time
    manager.on_partition_assign("input", 0, committed_offset=-1001)
    ref.transaction(0).as_state(b"key").set("n", 1)  # per message: its partition
"""

from __future__ import annotations

from typing import Any, Dict, Protocol, Tuple

__all__ = ("StoreRef", "TransactionLookup")


class TransactionLookup(Protocol):
    """Where a reference asks for a transaction its live map lacks: the StateStoreManager (typed by
    this protocol, so the manager imports this module and not the reverse)."""

    def get_transaction(self, stream_id: str, partition: int, store_name: str = "default") -> Any:
        """The transaction, or the error saying why there is none."""


class StoreRef:
    """A registered store of one stream: ``transaction(partition)`` is its transaction there."""

    __slots__ = ("stream_id", "name", "topics", "windowed", "_live", "_manager")

    def __init__(self, manager: TransactionLookup, stream_id: str, name: str, topics: Tuple[str, ...],
                 windowed: bool, live: Dict[int, Any]) -> None:
        self.stream_id = stream_id
        self.name = name
        self.topics = topics
        self.windowed = windowed
        self._live = live
        self._manager = manager

    def transaction(self, partition: int) -> Any:
        """The store's transaction of ``partition`` (lives across checkpoints while assigned)."""
        tx = self._live.get(partition)
        if tx is None:  # raises the explanatory error (store not registered / partition not assigned)
            return self._manager.get_transaction(self.stream_id, partition, self.name)
        return tx

    def __repr__(self) -> str:
        kind = "windowed store" if self.windowed else "store"
        return f"StoreRef({kind} {self.name!r} of stream {self.stream_id!r})"

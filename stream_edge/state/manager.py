"""StateStoreManager: registers stores, opens them per assigned partition, runs checkpoints.

Layout on disk: ``<state_dir>/<group>/<store>/<topic>/<partition>/`` is one RocksDB database.
A checkpoint is two calls from the runtime (see docs/internals.md):
``prepare_checkpoint(offsets)`` serialises every changed partition and produces its changelog
records; ``commit_checkpoint(offsets)`` writes each one in a single RocksDB write batch with its
processed offset. Partitions missing from ``offsets`` (nothing committed for them) are rolled back.

Example::

    manager = StateStoreManager(group_id="g", state_dir="state", use_changelog_topics=False)
    manager.register_store("input")
    manager.on_partition_assign("input", 0, committed_offset=-1001)
    manager.get_transaction("input", 0).as_state(b"key").set("n", 1)
    manager.prepare_checkpoint({("input", 0): 7}); manager.commit_checkpoint({("input", 0): 7})
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from .backends import MemoryBackend, RocksDBBackend, StoreBackend
from .changelog import ChangelogWriter
from .exceptions import (StateRecoveryOffsetOutOfRange, ChangelogTopicError, PartitionNotAssignedError, StateOffsetMismatchError,
                         StoreNotRegisteredError)
from .recovery import ChangelogRecovery
from .rocksdb.options import RocksDBOptions
from .transaction import BaseTransaction, PartitionTransaction
from .windowed import WindowedPartitionTransaction

__all__ = ("StateStoreManager", "StoreTypes", "DEFAULT_STATE_STORE_NAME")

logger = logging.getLogger("stream_edge.state")

DEFAULT_STATE_STORE_NAME = "default"
StoreTypes = str  # "rocksdb" or "memory"
_STORE_TYPES = ("rocksdb", "memory")


@dataclass
class _StoreSpec:
    name: str
    topic: str
    store_type: str
    windowed: bool
    changelog: Optional[ChangelogWriter] = None


@dataclass
class _StorePartition:
    spec: _StoreSpec
    partition: int
    backend: StoreBackend
    transaction: BaseTransaction
    pending_offset: Optional[int] = None  # processed offset of the prepared checkpoint

    @property
    def label(self) -> str:
        return f"store '{self.spec.name}' of topic '{self.spec.topic}' partition {self.partition}"


class StateStoreManager:
    """Keyed state stores of one application (see the module docstring)."""

    def __init__(self, group_id: str, state_dir: Union[str, Path], rocksdb_options: Optional[RocksDBOptions] = None,
                 use_changelog_topics: bool = True, producer: Any = None, consumer: Any = None,
                 topic_manager: Any = None, default_store_type: StoreTypes = "rocksdb",
                 recovery_timeout: float = 60.0, auto_recover_from_source_offset_out_of_range: bool = True,
                 state_recovery_offset_reset: str = "earliest", auto_offset_reset: str = "latest") -> None:
        if default_store_type not in _STORE_TYPES:
            raise ValueError(f"default_store_type must be one of {_STORE_TYPES}, got {default_store_type!r}")
        self._group_id = group_id
        self._state_dir = Path(state_dir)
        self._options = rocksdb_options or RocksDBOptions()
        self._use_changelog_topics = use_changelog_topics
        self._producer = producer
        self._consumer = consumer
        self._topic_manager = topic_manager
        self._default_store_type = default_store_type
        self._recovery_timeout = recovery_timeout
        if state_recovery_offset_reset not in ("earliest", "latest", "match"):
            raise ValueError("state_recovery_offset_reset must be 'earliest', 'latest' or 'match', "
                             f"got {state_recovery_offset_reset!r}")
        self._auto_recover = auto_recover_from_source_offset_out_of_range
        self._recovery_reset = (auto_offset_reset if state_recovery_offset_reset == "match"
                                else state_recovery_offset_reset)
        self._stores: Dict[str, Dict[str, _StoreSpec]] = {}
        self._partitions: Dict[Tuple[str, int], Dict[str, _StorePartition]] = {}
        self._transactions: Dict[Tuple[str, int, str], BaseTransaction] = {}
        # per store: {(topic, partition): transaction}, kept up to date in place for hot loops
        self._store_transactions: Dict[str, Dict[Tuple[str, int], BaseTransaction]] = {}
        self._recovery: Optional[ChangelogRecovery] = None
        self._changelog_topics_created = False

    # -- registration ---------------------------------------------------------------------------
    @property
    def stores_registered(self) -> bool:
        return bool(self._stores)

    @property
    def stores(self) -> Dict[str, Dict[str, _StoreSpec]]:
        return self._stores

    @property
    def using_changelogs(self) -> bool:
        return self._use_changelog_topics

    def register_store(self, topic_name: str, store_name: str = DEFAULT_STATE_STORE_NAME,
                       store_type: Optional[StoreTypes] = None) -> None:
        """Register a key-value store for ``topic_name`` (again with the same name: no-op)."""
        self._register(topic_name, store_name, store_type or self._default_store_type, windowed=False)

    def register_windowed_store(self, topic_name: str, store_name: str) -> None:
        """Register a windowed store (always RocksDB-backed unless the default type is memory)."""
        self._register(topic_name, store_name, self._default_store_type, windowed=True)

    def _register(self, topic: str, name: str, store_type: str, windowed: bool) -> None:
        if store_type not in _STORE_TYPES:
            raise ValueError(f"store_type must be one of {_STORE_TYPES}, got {store_type!r}")
        existing = self._stores.get(topic, {}).get(name)
        if existing is not None:
            if existing.windowed != windowed:
                raise ValueError(f"store '{name}' of topic '{topic}' is already registered as "
                                 f"{'windowed' if existing.windowed else 'key-value'}")
            return
        spec = _StoreSpec(name=name, topic=topic, store_type=store_type, windowed=windowed)
        if self._use_changelog_topics:
            spec.changelog = self._changelog_writer(topic, name)
        self._stores.setdefault(topic, {})[name] = spec

    def _changelog_writer(self, topic: str, store_name: str) -> ChangelogWriter:
        if self._topic_manager is None or self._producer is None:
            raise ChangelogTopicError("use_changelog_topics=True needs the application's topic manager and "
                                      "producer; pass them or set use_changelog_topics=False")
        changelog = self._topic_manager.changelog_topic(topic_name=topic, store_name=store_name)
        self._changelog_topics_created = False
        return ChangelogWriter(self._producer, changelog.name)

    def _ensure_changelog_topics(self) -> None:
        if self._changelog_topics_created or not self._use_changelog_topics:
            return
        topics = [self._topic_manager.changelog_topics[topic][name]
                  for topic, specs in self._stores.items() for name in specs]
        # compacted, one partition per source partition; existing topics are left alone
        self._topic_manager.create_topics(topics)
        self._changelog_topics_created = True

    # -- assignment -----------------------------------------------------------------------------
    def _recovery_reader(self) -> ChangelogRecovery:
        if self._recovery is None:
            config = dict(getattr(self._consumer, "_config", None) or {})
            if not config.get("bootstrap.servers"):
                raise ChangelogTopicError("changelog recovery needs the application's consumer (its broker "
                                          "configuration) to read changelog topics")
            self._recovery = ChangelogRecovery(config, timeout=self._recovery_timeout)
        return self._recovery

    def _partition_path(self, spec: _StoreSpec, partition: int) -> Path:
        return self._state_dir / self._group_id / spec.name / spec.topic / str(partition)

    def on_partition_assign(self, topic: str, partition: int, committed_offset: int) -> Optional[int]:
        """Open the partition's stores and recover them from their changelogs (blocking).

        Returns the source offset to resume consuming from when the committed one is no longer
        retained by Kafka and the local state was rebuilt for that (see :meth:`_out_of_range`);
        None otherwise (resume from the committed offset).
        """
        specs = self._stores.get(topic)
        if not specs or (topic, partition) in self._partitions:
            return None
        committed = committed_offset if committed_offset is not None and committed_offset >= 0 else None
        resume_at: Optional[int] = None
        boundary = committed
        if committed is not None and self._use_changelog_topics:
            resume_at = self._out_of_range(topic, partition, committed)
            if resume_at is not None:
                # Changelog records carry the source offset of their checkpoint: apply those
                # below the new position ("earliest": the log start) and none of the others.
                boundary = resume_at if self._recovery_reset == "earliest" else 0
        opened: Dict[str, _StorePartition] = {}
        try:
            for name, spec in specs.items():
                if spec.store_type == "rocksdb":
                    backend: StoreBackend = RocksDBBackend(self._partition_path(spec, partition), self._options)
                else:
                    backend = MemoryBackend()
                tx_cls = WindowedPartitionTransaction if spec.windowed else PartitionTransaction
                sp = _StorePartition(spec, partition, backend, tx_cls(backend, self._options.dumps, self._options.loads))
                opened[name] = sp
                if resume_at is not None:
                    backend.clear()  # rebuilt below from the changelog, up to the boundary
                else:
                    self._check_offsets(sp, committed)
                if spec.changelog is not None:
                    self._ensure_changelog_topics()
                    self._recovery_reader().recover(backend, spec.changelog.topic, partition, boundary, sp.label)
        except BaseException:
            for sp in opened.values():
                sp.backend.close()
            raise
        self._partitions[(topic, partition)] = opened
        for name, sp in opened.items():
            self._transactions[(topic, partition, name)] = sp.transaction
            self._store_transactions.setdefault(name, {})[(topic, partition)] = sp.transaction
        return resume_at

    def _check_offsets(self, sp: _StorePartition, committed: Optional[int]) -> None:
        processed = sp.backend.processed_offset
        if processed is None:
            return
        if committed is None or processed >= committed:
            where = getattr(sp.backend, "path", "memory")
            raise StateOffsetMismatchError(
                f"{sp.label}: the local state holds messages up to offset {processed}, but the consumer group "
                f"'{self._group_id}' has {'no committed offset' if committed is None else f'committed offset {committed}'} "
                f"for this partition (its offsets expired or were reset). Processing would apply old state to "
                f"messages it already contains. Delete the state (Application.clear_state(), or remove {where}) "
                f"to rebuild it from the messages, or reset the group's offset to {processed + 1}.")

    def _out_of_range(self, topic: str, partition: int, committed: int) -> Optional[int]:
        """The source offset to resume from if ``committed`` is no longer retained, else None.

        Kafka's retention deleted messages the application never processed. As in Quix Streams
        3.28: with ``auto_recover_from_source_offset_out_of_range`` the local state is deleted and
        rebuilt from the changelog, and consumption resumes from the log start ("earliest") or the
        end ("latest"; "match" follows ``auto_offset_reset``); otherwise, or when that policy is
        "error", :class:`StateRecoveryOffsetOutOfRange` stops the application.
        """
        try:
            low, high = self._recovery_reader().watermarks(topic, partition)
        except Exception as exc:  # informative only: the consumer reports real broker errors
            logger.debug("could not read watermarks of %s[%d]: %s", topic, partition, exc)
            return None
        if committed >= low:
            return None
        lost = (f"topic '{topic}' partition {partition}: committed offset {committed} is no longer retained by "
                f"Kafka (log start {low}); {low - committed} messages were deleted by retention before they "
                f"were processed")
        if not self._auto_recover or self._recovery_reset not in ("earliest", "latest"):
            raise StateRecoveryOffsetOutOfRange(
                f"{lost}. Automatic recovery is off (auto_recover_from_source_offset_out_of_range="
                f"{self._auto_recover}, state_recovery_offset_reset policy '{self._recovery_reset}'); delete the "
                f"state (Application.clear_state()) and reset the group's offsets to go on")
        resume_at = low if self._recovery_reset == "earliest" else high
        logger.warning("%s. Deleting the local state, rebuilding it from the changelog and resuming from "
                       "offset %d (state_recovery_offset_reset '%s')", lost, resume_at, self._recovery_reset)
        return resume_at

    def on_partition_revoke(self, topic: str, partition: int) -> None:
        """Close the partition's stores; changes not committed by a checkpoint are dropped."""
        opened = self._partitions.pop((topic, partition), None)
        if not opened:
            return
        for name, sp in opened.items():
            self._transactions.pop((topic, partition, name), None)
            self._store_transactions.get(name, {}).pop((topic, partition), None)
            sp.transaction.rollback()
            sp.backend.close()

    # -- processing -----------------------------------------------------------------------------
    def get_transaction(self, topic: str, partition: int, store_name: str = DEFAULT_STATE_STORE_NAME) -> Any:
        """The transaction of ``store_name`` for ``topic[partition]`` (lives across checkpoints)."""
        try:
            return self._transactions[(topic, partition, store_name)]
        except KeyError:
            if store_name not in self._stores.get(topic, {}):
                raise StoreNotRegisteredError(
                    f"no state store '{store_name}' is registered for topic '{topic}'") from None
            raise PartitionNotAssignedError(
                f"topic '{topic}' partition {partition} is not assigned to this instance "
                f"(store '{store_name}')") from None

    def store_transactions(self, store_name: str) -> Dict[Tuple[str, int], Any]:
        """A live ``{(topic, partition): transaction}`` view of one store (updated on assign/revoke).

        Hot loops look transactions up here directly; a miss falls back to
        :meth:`get_transaction`, which raises the explanatory error.
        """
        return self._store_transactions.setdefault(store_name, {})

    # -- checkpoints ----------------------------------------------------------------------------
    def prepare_checkpoint(self, offsets: Optional[Dict[Tuple[str, int], int]] = None) -> None:
        """Produce changelog records for what changed since the last checkpoint.

        ``offsets`` are the last processed offsets of the checkpoint; a partition missing from
        them commits nothing, so its changes are rolled back instead.
        """
        for tp, opened in self._partitions.items():
            processed = None if offsets is None else offsets.get(tp)
            for sp in opened.values():
                if not sp.transaction.dirty:
                    sp.pending_offset = processed
                    continue
                if offsets is not None and processed is None:
                    sp.transaction.rollback()
                    continue
                changes = sp.transaction.prepare()
                sp.pending_offset = processed
                if sp.spec.changelog is not None and changes:
                    sp.spec.changelog.produce(sp.partition, changes, processed)

    def commit_checkpoint(self, offsets: Dict[Tuple[str, int], int]) -> None:
        """Write every changed partition in one RocksDB write batch, with its processed offset."""
        for tp, opened in self._partitions.items():
            processed = offsets.get(tp)
            for sp in opened.values():
                if processed is None:
                    if sp.transaction.dirty:
                        sp.transaction.rollback()
                    continue
                changelog_offset = None
                if sp.spec.changelog is not None and sp.transaction.dirty:
                    # the producer was flushed by the checkpoint: everything up to here is written
                    changelog_offset = self._recovery_reader().watermarks(sp.spec.changelog.topic, sp.partition)[1] - 1
                sp.transaction.commit(processed, changelog_offset)
                sp.pending_offset = None

    def abort_checkpoint(self) -> None:
        """Forget every uncommitted change (after a failed checkpoint)."""
        for opened in self._partitions.values():
            for sp in opened.values():
                sp.transaction.rollback()

    # -- lifecycle ------------------------------------------------------------------------------
    def clear_state(self) -> None:
        """Delete this group's local state (only while no partition is assigned)."""
        if self._partitions:
            raise RuntimeError("clear_state() cannot run while partitions are assigned")
        path = self._state_dir / self._group_id
        if path.exists():
            logger.info("deleting local state %s", path)
            shutil.rmtree(path)

    def close(self) -> None:
        for topic, partition in list(self._partitions):
            self.on_partition_revoke(topic, partition)
        if self._recovery is not None:
            self._recovery.close()
            self._recovery = None

    def __enter__(self) -> "StateStoreManager":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

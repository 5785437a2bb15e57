"""StateStoreManager: registers stores, opens them per assigned partition, runs checkpoints.

Stores belong to a *stream* (``stream_id``: a dataframe's input topic, or the sorted names of the
topics a ``concat`` merged, ``"left--right"``); registering one returns a :class:`StoreRef`, the
one way stateful functions, windows and joins reach its transaction. A stream's store partition
``p`` is opened when partition ``p`` of one of its topics is assigned and closed when one of them
is revoked; its processed offsets are kept per source topic.

Layout on disk: ``<state_dir>/<group>/<store>/<stream_id>/<partition>/`` is one RocksDB database.
A checkpoint is two calls from the runtime (see docs/internals.md):
``prepare_checkpoint(offsets)`` serialises every changed partition and produces its changelog
records; ``commit_checkpoint(offsets)`` writes each one in a single RocksDB write batch with its
processed offsets. Store partitions with no offset in ``offsets`` (nothing committed for them) are
rolled back.

Example::

    manager = StateStoreManager(group_id="g", state_dir="state", use_changelog_topics=False)
    ref = manager.register_store("input")
    manager.on_partition_assign("input", 0, committed_offset=-1001)
    ref.transaction(0).as_state(b"key").set("n", 1)
    manager.prepare_checkpoint({("input", 0): 7}); manager.commit_checkpoint({("input", 0): 7})
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from .backends import MemoryBackend, RocksDBBackend, StoreBackend
from .changelog import ChangelogWriter
from .exceptions import (StateRecoveryOffsetOutOfRange, ChangelogTopicError, PartitionNotAssignedError, StateOffsetMismatchError,
                         StoreNotRegisteredError)
from .recovery import ChangelogRecovery
from .rocksdb.options import RocksDBOptions
from .store_ref import StoreRef
from .transaction import BaseTransaction, PartitionTransaction
from .windowed import WindowedPartitionTransaction

__all__ = ("StateStoreManager", "StoreTypes", "DEFAULT_STATE_STORE_NAME")

logger = logging.getLogger("stream_edge.state")

DEFAULT_STATE_STORE_NAME = "default"
StoreTypes = str  # "rocksdb" or "memory"
_STORE_TYPES = ("rocksdb", "memory")

#: the committed offset of each source topic of one partition (None: the group has none)
Committed = Dict[str, Optional[int]]


@dataclass
class _StoreSpec:
    name: str
    stream_id: str
    topics: Tuple[str, ...]
    store_type: str
    windowed: bool
    ref: StoreRef
    changelog: Optional[ChangelogWriter] = None


@dataclass
class _StorePartition:
    spec: _StoreSpec
    partition: int
    backend: StoreBackend
    transaction: BaseTransaction

    @property
    def label(self) -> str:
        return f"store '{self.spec.name}' of stream '{self.spec.stream_id}' partition {self.partition}"


class StateStoreManager:
    """Keyed state stores of one application (see the module docstring)."""

    def __init__(self, group_id: str, state_dir: Union[str, Path], rocksdb_options: Optional[RocksDBOptions] = None,
                 use_changelog_topics: bool = True, producer: Any = None, consumer: Any = None,
                 topic_manager: Any = None, default_store_type: StoreTypes = "rocksdb",
                 recovery_timeout: float = 60.0, auto_recover_from_source_offset_out_of_range: bool = True,
                 state_recovery_offset_reset: str = "earliest", auto_offset_reset: str = "latest",
                 recovery_consumer_config: Optional[Mapping[str, Any]] = None) -> None:
        if default_store_type not in _STORE_TYPES:
            raise ValueError(f"default_store_type must be one of {_STORE_TYPES}, got {default_store_type!r}")
        self._group_id = group_id
        self._state_dir = Path(state_dir)
        self._options = rocksdb_options or RocksDBOptions()
        self._use_changelog_topics = use_changelog_topics
        self._producer = producer
        self._consumer = consumer
        # librdkafka settings of the changelog reader (the application's broker and consumer extras)
        self._recovery_consumer_config = dict(recovery_consumer_config or {})
        self._topic_manager = topic_manager
        self._default_store_type = default_store_type
        self._recovery_timeout = recovery_timeout
        if state_recovery_offset_reset not in ("earliest", "latest", "match"):
            raise ValueError("state_recovery_offset_reset must be 'earliest', 'latest' or 'match', "
                             f"got {state_recovery_offset_reset!r}")
        self._auto_recover = auto_recover_from_source_offset_out_of_range
        self._recovery_reset = (auto_offset_reset if state_recovery_offset_reset == "match"
                                else state_recovery_offset_reset)
        self._stores: Dict[str, Dict[str, _StoreSpec]] = {}          # stream id -> store name -> spec
        self._stream_topics: Dict[str, Tuple[str, ...]] = {}        # stream id -> its input topics
        self._topic_streams: Dict[str, List[str]] = {}              # input topic -> stream ids it feeds
        self._partitions: Dict[Tuple[str, int], Dict[str, _StorePartition]] = {}  # (stream id, partition)
        # (stream id, store name) -> {partition: transaction}: what each StoreRef reads, kept in place
        self._live: Dict[Tuple[str, str], Dict[int, BaseTransaction]] = {}
        self._recovery: Optional[ChangelogRecovery] = None
        self._changelog_topics_created = False

    # -- registration ---------------------------------------------------------------------------
    @property
    def stores_registered(self) -> bool:
        return bool(self._stores)

    @property
    def stores(self) -> Dict[str, Dict[str, _StoreSpec]]:
        """``{stream_id: {store_name: spec}}`` of the registered stores."""
        return self._stores

    @property
    def using_changelogs(self) -> bool:
        return self._use_changelog_topics

    def stream_topics(self, stream_id: str) -> Tuple[str, ...]:
        """The input topics of a stream with registered stores."""
        return self._stream_topics[stream_id]

    def register_store(self, stream_id: str, store_name: str = DEFAULT_STATE_STORE_NAME,
                       store_type: Optional[StoreTypes] = None, *,
                       topics: Optional[Sequence[str]] = None) -> StoreRef:
        """Register a key-value store of ``stream_id`` fed by ``topics`` (default: the topic named
        ``stream_id``); registering it again returns the same reference."""
        return self._register(stream_id, store_name, store_type or self._default_store_type, windowed=False,
                              topics=topics)

    def register_windowed_store(self, stream_id: str, store_name: str, *,
                                topics: Optional[Sequence[str]] = None) -> StoreRef:
        """Register a windowed store (always RocksDB-backed unless the default type is memory)."""
        return self._register(stream_id, store_name, self._default_store_type, windowed=True, topics=topics)

    def _register(self, stream_id: str, name: str, store_type: str, windowed: bool,
                  topics: Optional[Sequence[str]]) -> StoreRef:
        if store_type not in _STORE_TYPES:
            raise ValueError(f"store_type must be one of {_STORE_TYPES}, got {store_type!r}")
        sources = tuple(dict.fromkeys(topics)) if topics else (stream_id,)
        known = self._stream_topics.get(stream_id)
        if known is not None and set(known) != set(sources):
            raise ValueError(f"stream '{stream_id}' has stores fed by topics {list(known)}, not {list(sources)}")
        existing = self._stores.get(stream_id, {}).get(name)
        if existing is not None:
            if existing.windowed != windowed:
                raise ValueError(f"store '{name}' of stream '{stream_id}' is already registered as "
                                 f"{'windowed' if existing.windowed else 'key-value'}")
            return existing.ref
        if known is None:
            self._stream_topics[stream_id] = sources
            for topic in sources:
                self._topic_streams.setdefault(topic, []).append(stream_id)
        sources = self._stream_topics[stream_id]
        ref = StoreRef(self, stream_id, name, sources, windowed, self._live.setdefault((stream_id, name), {}))
        spec = _StoreSpec(name=name, stream_id=stream_id, topics=sources, store_type=store_type, windowed=windowed,
                          ref=ref)
        if self._use_changelog_topics:
            spec.changelog = self._changelog_writer(stream_id, name, sources)
        self._stores.setdefault(stream_id, {})[name] = spec
        return ref

    def _changelog_writer(self, stream_id: str, store_name: str, topics: Tuple[str, ...]) -> ChangelogWriter:
        if self._topic_manager is None or self._producer is None:
            raise ChangelogTopicError("use_changelog_topics=True needs the application's topic manager and "
                                      "producer; pass them or set use_changelog_topics=False")
        changelog = self._topic_manager.changelog_topic(stream_id=stream_id, store_name=store_name)
        self._changelog_topics_created = False
        return ChangelogWriter(self._producer, changelog.name, topics)

    def _ensure_changelog_topics(self) -> None:
        if self._changelog_topics_created or not self._use_changelog_topics:
            return
        topics = [self._topic_manager.changelog_topics[stream_id][name]
                  for stream_id, specs in self._stores.items() for name in specs]
        # compacted, one partition per source partition; existing topics are left alone
        self._topic_manager.create_topics(topics)
        self._changelog_topics_created = True

    # -- assignment -----------------------------------------------------------------------------
    def _recovery_reader(self) -> ChangelogRecovery:
        if self._recovery is None:
            config = dict(self._recovery_consumer_config)
            if not config.get("bootstrap.servers"):
                raise ChangelogTopicError("changelog recovery needs the application's broker configuration "
                                          "(recovery_consumer_config) to read changelog topics")
            self._recovery = ChangelogRecovery(config, timeout=self._recovery_timeout)
        return self._recovery

    def _partition_path(self, spec: _StoreSpec, partition: int) -> Path:
        return self._state_dir / self._group_id / spec.name / spec.stream_id / str(partition)

    def on_partition_assign(self, topic: str, partition: int, committed_offset: Optional[int]) -> Optional[int]:
        """Open the stores of the streams ``topic[partition]`` feeds (see :meth:`assign_partitions`).

        Returns the source offset to resume consuming from when the committed one is no longer
        retained by Kafka and the local state was rebuilt for that; None otherwise.
        """
        return self.assign_partitions([(topic, partition, committed_offset)]).get((topic, partition))

    def assign_partitions(self, assigned: Iterable[Tuple[str, int, Optional[int]]]) -> Dict[Tuple[str, int], int]:
        """Open the store partitions of newly assigned source partitions and recover them from their
        changelogs (blocking).

        ``assigned`` holds ``(topic, partition, committed offset)`` of one rebalance: the committed
        offsets of every topic of a stream's partition decide which changelog records apply.
        Returns ``{(topic, partition): offset}`` for partitions whose committed offset is no longer
        retained by Kafka (the local state was rebuilt; resume consuming there, see
        :meth:`_out_of_range`).
        """
        committed: Dict[int, Committed] = {}
        for topic, partition, offset in assigned:
            if topic in self._topic_streams:
                committed.setdefault(partition, {})[topic] = offset if offset is not None and offset >= 0 else None
        resume: Dict[Tuple[str, int], int] = {}
        for partition, offsets in committed.items():
            streams = [s for s in dict.fromkeys(s for t in offsets for s in self._topic_streams[t])
                       if (s, partition) not in self._partitions]
            if not streams:
                continue
            if self._use_changelog_topics:
                for topic, offset in offsets.items():
                    at = None if offset is None else self._out_of_range(topic, partition, offset)
                    if at is not None:
                        resume[(topic, partition)] = at
            for stream_id in streams:
                topics = self._stream_topics[stream_id]
                stream_committed = {t: offsets[t] for t in topics if t in offsets}
                resumed = {t: resume[(t, partition)] for t in topics if (t, partition) in resume}
                self._open_stream_partition(stream_id, partition, stream_committed, resumed)
        return resume

    def _open_stream_partition(self, stream_id: str, partition: int, committed: Committed,
                               resumed: Dict[str, int]) -> None:
        # Changelog records carry the source offsets of their checkpoint: for a topic whose
        # committed offset was lost, apply those below the new position ("earliest": the log
        # start) and none of the others.
        boundary: Committed = dict(committed)
        for topic, at in resumed.items():
            boundary[topic] = at if self._recovery_reset == "earliest" else 0
        opened: Dict[str, _StorePartition] = {}
        try:
            for name, spec in self._stores[stream_id].items():
                if spec.store_type == "rocksdb":
                    backend: StoreBackend = RocksDBBackend(self._partition_path(spec, partition), self._options)
                else:
                    backend = MemoryBackend()
                tx_cls = WindowedPartitionTransaction if spec.windowed else PartitionTransaction
                sp = _StorePartition(spec, partition, backend, tx_cls(backend, self._options.dumps, self._options.loads))
                opened[name] = sp
                if resumed:
                    backend.clear()  # rebuilt below from the changelog, up to the boundary
                else:
                    self._check_offsets(sp, committed)
                if spec.changelog is not None:
                    self._ensure_changelog_topics()
                    self._recovery_reader().recover(backend, spec.changelog.topic, partition, boundary, sp.label,
                                                    topics=spec.topics)
        except BaseException:
            for sp in opened.values():
                sp.backend.close()
            raise
        self._partitions[(stream_id, partition)] = opened
        for name, sp in opened.items():
            self._live[(stream_id, name)][partition] = sp.transaction

    def _check_offsets(self, sp: _StorePartition, committed: Committed) -> None:
        stored = dict(sp.backend.processed_offsets)
        legacy = sp.backend.legacy_processed_offset
        if legacy is not None and len(sp.spec.topics) == 1:
            stored.setdefault(sp.spec.topics[0], legacy)
        for topic, processed in stored.items():
            if topic not in committed:
                continue  # that topic's partition is not assigned in this rebalance
            offset = committed[topic]
            if offset is not None and processed < offset:
                continue
            where = getattr(sp.backend, "path", "memory")
            raise StateOffsetMismatchError(
                f"{sp.label}: the local state holds messages of topic '{topic}' up to offset {processed}, but the "
                f"consumer group '{self._group_id}' has "
                f"{'no committed offset' if offset is None else f'committed offset {offset}'} "
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
        """Close the store partitions of every stream ``topic`` feeds; changes not committed by a
        checkpoint are dropped."""
        for stream_id in self._topic_streams.get(topic, ()):
            self._close_stream_partition(stream_id, partition)

    def _close_stream_partition(self, stream_id: str, partition: int) -> None:
        opened = self._partitions.pop((stream_id, partition), None)
        if not opened:
            return
        for name, sp in opened.items():
            self._live[(stream_id, name)].pop(partition, None)
            sp.transaction.rollback()
            sp.backend.close()

    # -- processing -----------------------------------------------------------------------------
    def get_transaction(self, stream_id: str, partition: int, store_name: str = DEFAULT_STATE_STORE_NAME) -> Any:
        """The transaction of ``store_name`` of ``stream_id`` for ``partition`` (lives across
        checkpoints). Processing code holds a :class:`StoreRef` instead."""
        live = self._live.get((stream_id, store_name))
        tx = None if live is None else live.get(partition)
        if tx is not None:
            return tx
        if live is None:
            raise StoreNotRegisteredError(f"no state store '{store_name}' is registered for stream '{stream_id}'")
        raise PartitionNotAssignedError(
            f"stream '{stream_id}' partition {partition} is not assigned to this instance "
            f"(store '{store_name}'; topics {list(self._stream_topics[stream_id])})")

    # -- checkpoints ----------------------------------------------------------------------------
    def _processed(self, stream_id: str, partition: int,
                   offsets: Mapping[Tuple[str, int], int]) -> Dict[str, int]:
        """The last processed offset of each of the stream's topics in this checkpoint."""
        return {topic: offsets[(topic, partition)] for topic in self._stream_topics[stream_id]
                if (topic, partition) in offsets}

    def prepare_checkpoint(self, offsets: Optional[Dict[Tuple[str, int], int]] = None,
                           rewound: Collection[Tuple[str, int]] = ()) -> None:
        """Produce changelog records for what changed since the last checkpoint.

        ``offsets`` are the last processed offsets of the checkpoint; a store partition none of
        whose topics has one commits nothing, so its changes are rolled back instead. So are the
        changes of a store partition one of whose source partitions is in ``rewound`` (replayed
        after backpressure): its changes cannot be told apart by topic.
        """
        for (stream_id, partition), opened in self._partitions.items():
            processed = None if offsets is None else self._processed(stream_id, partition, offsets)
            held_back = bool(rewound) and any((t, partition) in rewound for t in self._stream_topics[stream_id])
            for sp in opened.values():
                if not sp.transaction.dirty:
                    continue
                if held_back or (processed is not None and not processed):
                    sp.transaction.rollback()
                    continue
                changes = sp.transaction.prepare()
                if sp.spec.changelog is not None and changes:
                    sp.spec.changelog.produce(partition, changes, processed)

    def commit_checkpoint(self, offsets: Dict[Tuple[str, int], int]) -> None:
        """Write every changed partition in one RocksDB write batch, with its processed offsets."""
        for (stream_id, partition), opened in self._partitions.items():
            processed = self._processed(stream_id, partition, offsets)
            for sp in opened.values():
                if not processed:
                    if sp.transaction.dirty:
                        sp.transaction.rollback()
                    continue
                changelog_offset = None
                if sp.spec.changelog is not None and sp.transaction.dirty:
                    # the producer was flushed by the checkpoint: everything up to here is written
                    changelog_offset = self._recovery_reader().watermarks(sp.spec.changelog.topic, sp.partition)[1] - 1
                sp.transaction.commit(processed, changelog_offset)

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
        for stream_id, partition in list(self._partitions):
            self._close_stream_partition(stream_id, partition)
        if self._recovery is not None:
            self._recovery.close()
            self._recovery = None

    def __enter__(self) -> "StateStoreManager":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""The I/O side of the lake commit protocol (decisions live in :mod:`stream_edge.lake.commit_log`
and :mod:`stream_edge.lake.fencing`).

``LakeTableWriter.commit()`` writes one topic partition's batch as::

    stage (data files under _tmp/<topic>/<partition>/e<epoch>/, fsynced)
      -> commit record (created only if its slot is free: THE commit) -> publish (move to hive paths)

and ``prepare()`` runs before every write: it reads the newest entry of the partition's commit
log. On the first write after the partition was assigned (or after :meth:`release`) it claims the
partition: rolls the newest commit forward, then creates the next slot with a claim record of a
higher epoch. Later it checks that no newer owner has claimed the partition since
(:class:`LakeCommitFencedError` otherwise), rolls a half-published commit forward, deletes what
was staged and never committed under its epoch or an older one, and returns the newest commit so
the caller can skip records that are already in the lake.

Atomicity: on a local filesystem a log entry is written to a temp name, fsynced and hard-linked
to its slot name (the link fails if the slot exists), and its folder fsynced; on S3 one
conditional PUT (``If-None-Match: *``). Moves are renames locally and copy + delete on S3; both
are idempotent thanks to roll-forward, and a move whose source another writer already moved is
done.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import time
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from stream_edge.lake import (
    CommitRecord,
    CommittedFile,
    commit_dir,
    commit_record_path,
    commit_record_slot,
    decode_commit_record,
    encode_commit_record,
    final_file_path,
    latest_commit_name,
    names_to_prune,
    plan_recovery,
    staged_file_path,
    staging_epoch_prefix,
    staging_prefix,
)
from stream_edge.lake.commit_log import COMMIT
from stream_edge.lake.exclusive_create import ExclusiveCreator
from stream_edge.lake.fencing import (
    FENCED,
    OURS,
    CommitFencedError,
    check_owner,
    claim_record,
    conflict_outcome,
    effective_commit,
    next_slot,
)
from stream_edge.lake.naming import COMMITS_DIR
from stream_edge.sinks.base import SinkBackpressureError

from .records import PartitionedTable

__all__ = ("LakeTableWriter", "LakeCommitFencedError", "CRASH_POINTS", "FENCED_RETRY_SECONDS")

logger = logging.getLogger(__name__)

#: Points of the protocol where tests inject a crash (``writer.crash_hook(point)``), one commit's.
#: The hook also sees ``"after-claim"``, once per assignment (the claim is in the log, nothing
#: cleaned yet).
CRASH_POINTS = ("before-stage", "after-stage", "after-commit-record", "after-publish")

#: How long a fenced partition is paused: by then the consumer has heard of the rebalance that
#: moved the partition and the runtime has revoked it (its replay then never happens here).
FENCED_RETRY_SECONDS = 5.0

_CLAIM_ATTEMPTS = 20  # claims lost in a row to other writers before giving up for this flush


class LakeCommitFencedError(SinkBackpressureError):
    """This writer lost the partition to a newer owner (see :mod:`stream_edge.lake.fencing`).

    A :class:`SinkBackpressureError`: the runtime drops the partition's batch (nothing of it was
    committed), pauses the partition and would replay it; by then the rebalance that moved the
    partition has revoked it here, so its new owner writes those records, once.
    """

    def __init__(self, fenced: CommitFencedError) -> None:
        super().__init__(FENCED_RETRY_SECONDS, fenced.topic, fenced.partition)
        self.fenced = fenced
        self.args = (str(fenced),)

    def __str__(self) -> str:
        return str(self.fenced)


DICTIONARY_ENCODINGS = ("strings", "all", "none")


def dictionary_columns(schema: pa.Schema) -> List[str]:
    """The top-level string and binary columns: the ones Parquet's dictionary encoding pays for.

    pyarrow dictionary-encodes every column by default, which for event data means hashing every
    id, timestamp and measurement into a dictionary as large as the column itself: landing the
    bench's readings (``id, sensor, ts_ms, temp, hum``), writing a file took 1.63 ms with every
    column dictionary-encoded and 0.71 ms with only ``sensor``, and the file was 11% smaller
    (bench/README.md, lake_ingest). Strings repeat (names, categories, units) and gain the most."""
    return [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type) or pa.types.is_dictionary(f.type)]


class LakeTableWriter:
    """Writes committed Parquet files and the commit log under one table root.

    :param filesystem: a pyarrow filesystem.
    :param root: the table root inside it (no trailing slash).
    :param compression: Parquet compression codec.
    :param row_group_size: max rows per row group (None: pyarrow's default).
    :param dictionary_encoding: which columns get Parquet dictionary encoding: ``"strings"`` (the
        default: string and binary columns, see :func:`dictionary_columns`), ``"all"`` (pyarrow's
        default) or ``"none"``.
    :param fsync: fsync staged files and commit records on local disks (survives power loss).
    :param commit_log_retention: newest commit log entries kept per partition.
    """

    def __init__(self, filesystem: pafs.FileSystem, root: str, *, compression: str = "snappy",
                 row_group_size: Optional[int] = None, fsync: bool = True,
                 commit_log_retention: int = 1000, dictionary_encoding: str = "strings") -> None:
        if dictionary_encoding not in DICTIONARY_ENCODINGS:
            raise ValueError(f"dictionary_encoding must be one of {DICTIONARY_ENCODINGS}, got {dictionary_encoding!r}")
        self.dictionary_encoding = dictionary_encoding
        self.fs = filesystem
        self.root = root.rstrip("/")
        self.local = filesystem.type_name == "local"
        self.compression = compression
        self.row_group_size = row_group_size
        self.fsync = fsync
        self.retention = commit_log_retention
        # Unique per writer, not per process: two writers of one process are two owners.
        self.writer_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.crash_hook: Optional[Callable[[str], None]] = None
        self._create = ExclusiveCreator(filesystem, local=self.local, fsync=fsync)
        if not self._create.atomic:
            logger.warning("DataLakeSink: %s has no conditional create: two writers of one partition (a "
                           "stalled instance and its replacement) are not fenced from each other",
                           filesystem.type_name)
        self._cache: Dict[Tuple[str, int], Tuple[str, CommitRecord]] = {}
        self._names: Dict[Tuple[str, int], List[str]] = {}
        self._epochs: Dict[Tuple[str, int], int] = {}  # partitions this writer owns -> its epoch
        self._slots: Dict[Tuple[str, int], Optional[int]] = {}  # newest slot read by prepare()
        self._temps: Dict[Tuple[str, int], List[str]] = {}  # temp files seen in the log's folder
        # What this writer published (for metrics): counted per commit, never per record.
        self.files_written = 0
        self.bytes_written = 0
        self.rows_written = 0

    # -- paths ----------------------------------------------------------------------------------
    def abs(self, relative: str) -> str:
        return f"{self.root}/{relative}" if relative else self.root

    def _hook(self, point: str) -> None:
        if self.crash_hook is not None:
            self.crash_hook(point)

    def _list(self, relative: str, recursive: bool) -> List[pafs.FileInfo]:
        selector = pafs.FileSelector(self.abs(relative), recursive=recursive, allow_not_found=True)
        return [info for info in self.fs.get_file_info(selector) if info.type == pafs.FileType.File]

    def _rel(self, absolute: str) -> str:
        return absolute[len(self.root) + 1:]

    # -- reading the log ------------------------------------------------------------------------
    def _read(self, name: str) -> CommitRecord:
        with self.fs.open_input_stream(self.abs(name)) as stream:
            return decode_commit_record(stream.read(), source=self.abs(name))

    def _latest_entry(self, topic: str, partition: int) -> Tuple[Optional[int], Optional[CommitRecord]]:
        """The newest slot of the partition's log and its entry (cached by name)."""
        paths: List[str] = []
        temps: List[str] = []
        for info in self._list(commit_dir(topic, partition), recursive=False):
            (temps if info.base_name.startswith(".") else paths).append(info.path)
        names = [self._rel(path) for path in paths]
        self._names[(topic, partition)] = names
        self._temps[(topic, partition)] = temps
        name = latest_commit_name(names)
        if name is None:
            return None, None
        cached = self._cache.get((topic, partition))
        if cached is not None and cached[0] == name:
            return commit_record_slot(name), cached[1]
        record = self._read(name)
        self._cache[(topic, partition)] = (name, record)
        return commit_record_slot(name), record

    def latest_commit(self, topic: str, partition: int) -> Optional[CommitRecord]:
        """What the partition's newest log entry says is committed (None: nothing yet)."""
        return effective_commit(self._latest_entry(topic, partition)[1])

    def owner_epoch(self, topic: str, partition: int) -> Optional[int]:
        """The epoch this writer owns the partition with (None: not claimed, or released)."""
        return self._epochs.get((topic, partition))

    def latest_commits_of_table(self) -> List[CommitRecord]:
        """The newest record of every topic partition of the table (to restore the schema)."""
        by_dir: Dict[str, List[str]] = {}
        for info in self._list(COMMITS_DIR, recursive=True):
            rel = self._rel(info.path)
            by_dir.setdefault(rel.rsplit("/", 1)[0], []).append(rel)
        records = []
        for names in by_dir.values():
            name = latest_commit_name(names)
            if name is not None:
                record = effective_commit(self._read(name))
                if record is not None:
                    records.append(record)
        return records

    # -- ownership ------------------------------------------------------------------------------
    def release(self, topic: str, partition: int) -> None:
        """The partition was revoked or lost: the next write of it claims it again."""
        self._epochs.pop((topic, partition), None)
        self._slots.pop((topic, partition), None)

    def _claim(self, topic: str, partition: int) -> Tuple[Optional[int], Optional[CommitRecord]]:
        """Take the partition: roll the newest commit forward, then create the next slot with a
        claim of a higher epoch. Returns the claim's slot and the claim."""
        for _ in range(_CLAIM_ATTEMPTS):
            slot, latest = self._latest_entry(topic, partition)
            if latest is not None:
                self._roll_forward(latest)  # before the claim: the claim never sits on unpublished files
            claim = claim_record(topic, partition, latest, self.writer_id, int(time.time() * 1000))
            name = commit_record_path(topic, partition, next_slot(slot))
            try:
                self._create(self.abs(name), encode_commit_record(claim))
            except FileExistsError:
                if conflict_outcome(claim, self._read(name)) != OURS:
                    continue  # another writer took that slot first: read again, claim the next
            self._cache[(topic, partition)] = (name, claim)
            self._names.setdefault((topic, partition), []).append(name)
            self._epochs[(topic, partition)] = claim.epoch
            logger.info("%s[%s]: owned by this writer from slot %d with epoch %d", topic, partition,
                        next_slot(slot), claim.epoch)
            self._hook("after-claim")
            return next_slot(slot), claim
        raise OSError(f"{topic}[{partition}]: lost the claim of the commit log {_CLAIM_ATTEMPTS} times in a row "
                      f"under {self.abs(commit_dir(topic, partition))}: is another writer claiming it in a loop?")

    def _fenced(self, exc: CommitFencedError) -> LakeCommitFencedError:
        logger.warning("DataLakeSink: %s", exc)
        return LakeCommitFencedError(exc)

    # -- recovery -------------------------------------------------------------------------------
    def _roll_forward(self, latest: CommitRecord) -> None:
        """Publish the files of ``latest`` that are still staged (a crash or a stall mid-publish)."""
        staged = [f for f in latest.files if f.staged_path]
        if not staged:
            return
        infos = self.fs.get_file_info([self.abs(f.staged_path) for f in staged])
        for item, info in zip(staged, infos):
            if info.type == pafs.FileType.File:
                self._move(item.staged_path, item.path)

    def prepare(self, topic: str, partition: int) -> Optional[CommitRecord]:
        """Own the partition (claim it on the first call), clean its staging area and return its
        newest commit. Raises :class:`LakeCommitFencedError` when a newer owner claimed it."""
        key = (topic, partition)
        owned = self._epochs.get(key)
        folders: Set[str] = set()  # staging folders to remove once emptied
        if owned is None:
            slot, latest = self._claim(topic, partition)
            epoch = self._epochs[key]
            # The claim rolled the newest commit forward: its (older) staging folder can go now
            # that its writer can no longer commit from it.
            folders.update(_staging_folder(f.staged_path) for f in (latest.files if latest else ()) if f.staged_path)
        else:
            epoch = owned
            slot, latest = self._latest_entry(topic, partition)
            try:
                check_owner(topic, partition, latest, epoch)
            except CommitFencedError as exc:
                raise self._fenced(exc) from None
        self._slots[key] = slot
        for temp in self._temps.pop(key, ()):
            # A temp file of a log entry whose writer died before the link (or a stale writer's
            # entry in flight, which can no longer land): removed by the owner only.
            try:
                self.fs.delete_file(temp)
            except FileNotFoundError:
                pass
        staged = [self._rel(info.path) for info in self._list(staging_prefix(topic, partition), recursive=True)]
        if staged or folders:
            existing = []
            if latest is not None:
                wanted = {f.staged_path: f.path for f in latest.files}
                finals = [wanted[p] for p in staged if p in wanted]
                infos = self.fs.get_file_info([self.abs(p) for p in finals]) if finals else []
                existing = [p for p, info in zip(finals, infos) if info.type == pafs.FileType.File]
            plan = plan_recovery(latest, staged, existing, owner_epoch=epoch)
            for staged_path, final_path in plan.publish:
                self._move(staged_path, final_path)
            for path in plan.delete:
                try:
                    self.fs.delete_file(self.abs(path))
                except FileNotFoundError:
                    pass
            # Remove the emptied staging folders (an epoch's, or a commit's of before epochs):
            # never a newer owner's, which may be staging a commit right now.
            folders.update(_staging_folder(p) for p in [source for source, _ in plan.publish] + plan.delete)
            for folder in sorted(folders):
                self._remove_staging_dir(folder)
        return effective_commit(latest)

    # -- writing --------------------------------------------------------------------------------
    def commit(self, topic: str, partition: int, first_offset: int, last_offset: int,
               parts: Sequence[PartitionedTable], rows: int, schema: Dict[str, str],
               schema_ipc: str) -> CommitRecord:
        """Stage, commit and publish one batch; returns the commit record written.

        Call :meth:`prepare` first (the slot it read is the one this commit follows). Raises
        :class:`LakeCommitFencedError` when the slot was taken by a newer owner: nothing of the
        batch is committed.
        """
        key = (topic, partition)
        if key not in self._slots:
            self.prepare(topic, partition)
        epoch, slot = self._epochs[key], next_slot(self._slots[key])
        self._hook("before-stage")
        files = []
        written = 0
        for part in parts:
            staged = staged_file_path(topic, partition, first_offset, last_offset, part.hive_path, epoch=epoch)
            final = final_file_path(topic, partition, first_offset, last_offset, part.hive_path)
            written += self._write_parquet(part.table, staged)
            files.append(CommittedFile(final, staged, part.table.num_rows, part.partition_values))
        self._hook("after-stage")
        record = CommitRecord(topic, partition, first_offset, last_offset, files=files, rows=rows,
                              schema=schema, schema_ipc=schema_ipc, created_ms=int(time.time() * 1000),
                              writer=self.writer_id, epoch=epoch, kind=COMMIT)
        name = commit_record_path(topic, partition, slot)
        try:
            self._create(self.abs(name), encode_commit_record(record))
        except FileExistsError:
            existing = self._read(name)
            if conflict_outcome(record, existing) == FENCED:
                # Our staged files stay under our epoch's folder: the new owner deletes them.
                self._slots.pop(key, None)
                raise self._fenced(CommitFencedError(topic, partition, epoch, existing.epoch,
                                                     existing.writer)) from None
        self._slots[key] = slot
        self._cache[key] = (name, record)
        self._hook("after-commit-record")
        for item in files:
            self._move(item.staged_path, item.path)
        self._remove_staged_folders([item.staged_path for item in files], staging_epoch_prefix(topic, partition, epoch))
        self._prune(topic, partition, name)
        self.files_written += len(files)
        self.bytes_written += written
        self.rows_written += rows
        self._hook("after-publish")
        return record

    def _write_parquet(self, table: pa.Table, relative: str) -> int:
        """Write one staged file; returns its size in bytes."""
        path = self.abs(relative)
        kwargs: Dict[str, Any] = {"compression": self.compression}
        if self.dictionary_encoding != "all":
            kwargs["use_dictionary"] = dictionary_columns(table.schema) if self.dictionary_encoding == "strings" else False
        if self.row_group_size:
            kwargs["row_group_size"] = self.row_group_size
        if self.local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            pq.write_table(table, path, **kwargs)
            if self.fsync:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            return os.path.getsize(path)
        with self.fs.open_output_stream(path) as stream:
            pq.write_table(table, stream, **kwargs)
            return int(stream.tell())

    def _move(self, staged: str, final: str) -> None:
        """Publish one committed file. Its source may be gone because another writer (the new owner
        rolling our commit forward, or we, rolling its) moved it first: then the move is done."""
        try:
            if self.local:
                os.makedirs(os.path.dirname(self.abs(final)), exist_ok=True)
                os.replace(self.abs(staged), self.abs(final))
            else:
                self.fs.move(self.abs(staged), self.abs(final))  # copy + delete: idempotent on replay
        except OSError:  # pyarrow's S3 says "does not exist" as a plain OSError
            source, target = self.fs.get_file_info([self.abs(staged), self.abs(final)])
            if source.type != pafs.FileType.NotFound or target.type != pafs.FileType.File:
                raise

    def _remove_staged_folders(self, staged_paths: List[str], epoch_prefix: str) -> None:
        """After a commit's files were published: remove the folders they were staged in, up to
        and including the owner's staging folder ``epoch_prefix``.

        On a local disk each folder is known and now empty, so it is removed with one ``rmdir``
        each, deepest first, instead of ``shutil.rmtree`` opening and listing every one (~2x the
        syscalls, per commit). A folder that is not empty (files of an earlier commit of this
        owner that failed after staging) makes it fall back to removing the whole staging folder,
        as before."""
        if not self.local:
            self._remove_staging_dir(epoch_prefix)
            return
        folders = {epoch_prefix}
        inside = epoch_prefix + "/"
        for path in staged_paths:
            folder = path.rsplit("/", 1)[0]
            while folder.startswith(inside) and folder not in folders:
                folders.add(folder)
                folder = folder.rsplit("/", 1)[0]
        try:
            for folder in sorted(folders, key=lambda name: name.count("/"), reverse=True):
                try:
                    os.rmdir(self.abs(folder))
                except FileNotFoundError:
                    pass
        except OSError:  # not empty: leftovers of a failed commit
            self._remove_staging_dir(epoch_prefix)

    def _remove_staging_dir(self, relative: str) -> None:
        """Drop a (hidden) staging folder once empty of data.

        On S3, pyarrow keeps "directories" alive with marker objects when their last file is
        deleted; removing the whole staging prefix keeps those from piling up.
        """
        if self.local:
            shutil.rmtree(self.abs(relative), ignore_errors=True)
            return
        try:
            self.fs.delete_dir(self.abs(relative))
        except FileNotFoundError:
            pass

    def _prune(self, topic: str, partition: int, newest: str) -> None:
        names = list(self._names.get((topic, partition), ())) + [newest]
        for name in names_to_prune(set(names), self.retention):
            try:
                self.fs.delete_file(self.abs(name))
            except FileNotFoundError:
                pass
        keep = set(names) - set(names_to_prune(set(names), self.retention))
        self._names[(topic, partition)] = sorted(keep)

    def committed_file_paths(self, record: CommitRecord) -> List[str]:
        return [self.abs(f.path) for f in record.files]


def _staging_folder(staged_path: str) -> str:
    """The folder one owner staged a file in: ``_tmp/<topic>/<partition>/e<epoch>``, or the
    commit's own folder for files staged before epochs existed."""
    return "/".join(staged_path.split("/")[:4])

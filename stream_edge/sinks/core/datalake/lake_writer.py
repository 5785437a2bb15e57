"""The I/O side of the lake commit protocol (decisions live in :mod:`stream_edge.lake.commit_log`).

``LakeTableWriter.commit()`` writes one topic partition's batch as::

    stage (data files under _tmp/, fsynced) -> commit record (atomic) -> publish (move to hive paths)

and ``prepare()`` runs before every write: it reads the newest commit record of the partition,
rolls a half-published commit forward, deletes anything staged but never committed, and returns
the last committed offset so the caller can skip records that are already in the lake.

Atomicity: on a local filesystem the commit record is written to a temp name, fsynced and renamed
(``os.replace``), and its folder fsynced; on S3 one PUT is atomic. Moves are renames locally and
copy + delete on S3; both are idempotent thanks to roll-forward.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs as pafs

from stream_edge.lake import (
    CommitRecord,
    CommittedFile,
    commit_dir,
    commit_record_path,
    decode_commit_record,
    encode_commit_record,
    final_file_path,
    latest_commit_name,
    names_to_prune,
    plan_recovery,
    staged_file_path,
    staging_prefix,
)
from stream_edge.lake.durable import write_atomic
from stream_edge.lake.naming import COMMITS_DIR

from .records import PartitionedTable

__all__ = ("LakeTableWriter", "CRASH_POINTS")

#: Points of the protocol where tests inject a crash (``writer.crash_hook(point)``).
CRASH_POINTS = ("before-stage", "after-stage", "after-commit-record", "after-publish")


class LakeTableWriter:
    """Writes committed Parquet files and the commit log under one table root.

    :param filesystem: a pyarrow filesystem.
    :param root: the table root inside it (no trailing slash).
    :param compression: Parquet compression codec.
    :param row_group_size: max rows per row group (None: pyarrow's default).
    :param fsync: fsync staged files and commit records on local disks (survives power loss).
    :param commit_log_retention: newest commit records kept per partition.
    """

    def __init__(self, filesystem: pafs.FileSystem, root: str, *, compression: str = "snappy",
                 row_group_size: Optional[int] = None, fsync: bool = True,
                 commit_log_retention: int = 1000) -> None:
        self.fs = filesystem
        self.root = root.rstrip("/")
        self.local = filesystem.type_name == "local"
        self.compression = compression
        self.row_group_size = row_group_size
        self.fsync = fsync
        self.retention = commit_log_retention
        self.writer_id = f"{socket.gethostname()}:{os.getpid()}"
        self.crash_hook: Optional[Callable[[str], None]] = None
        self._cache: Dict[Tuple[str, int], Tuple[str, CommitRecord]] = {}
        self._names: Dict[Tuple[str, int], List[str]] = {}
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
    def latest_commit(self, topic: str, partition: int) -> Optional[CommitRecord]:
        """The newest commit record of the partition, read from storage (cached by name)."""
        names = []
        for info in self._list(commit_dir(topic, partition), recursive=False):
            if info.base_name.startswith("."):
                # A temp file of a commit record whose writer died before the rename.
                self.fs.delete_file(info.path)
                continue
            names.append(self._rel(info.path))
        self._names[(topic, partition)] = names
        name = latest_commit_name(names)
        if name is None:
            return None
        cached = self._cache.get((topic, partition))
        if cached is not None and cached[0] == name:
            return cached[1]
        with self.fs.open_input_stream(self.abs(name)) as stream:
            record = decode_commit_record(stream.read(), source=self.abs(name))
        self._cache[(topic, partition)] = (name, record)
        return record

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
                with self.fs.open_input_stream(self.abs(name)) as stream:
                    records.append(decode_commit_record(stream.read(), source=self.abs(name)))
        return records

    # -- recovery -------------------------------------------------------------------------------
    def prepare(self, topic: str, partition: int) -> Optional[CommitRecord]:
        """Read the partition's newest commit and clean its staging area; returns that commit."""
        latest = self.latest_commit(topic, partition)
        staged = [self._rel(info.path) for info in self._list(staging_prefix(topic, partition), recursive=True)]
        if staged:
            existing = []
            if latest is not None:
                wanted = {f.staged_path: f.path for f in latest.files}
                finals = [wanted[p] for p in staged if p in wanted]
                infos = self.fs.get_file_info([self.abs(p) for p in finals]) if finals else []
                existing = [p for p, info in zip(finals, infos) if info.type == pafs.FileType.File]
            plan = plan_recovery(latest, staged, existing)
            for staged_path, final_path in plan.publish:
                self._move(staged_path, final_path)
            for path in plan.delete:
                self.fs.delete_file(self.abs(path))
            self._remove_staging_dir(staging_prefix(topic, partition))
        return latest

    # -- writing --------------------------------------------------------------------------------
    def commit(self, topic: str, partition: int, first_offset: int, last_offset: int,
               parts: Sequence[PartitionedTable], rows: int, schema: Dict[str, str],
               schema_ipc: str) -> CommitRecord:
        """Stage, commit and publish one batch; returns the commit record written."""
        self._hook("before-stage")
        files = []
        written = 0
        for part in parts:
            staged = staged_file_path(topic, partition, first_offset, last_offset, part.hive_path)
            final = final_file_path(topic, partition, first_offset, last_offset, part.hive_path)
            written += self._write_parquet(part.table, staged)
            files.append(CommittedFile(final, staged, part.table.num_rows, part.partition_values))
        self._hook("after-stage")
        record = CommitRecord(topic, partition, first_offset, last_offset, files=files, rows=rows,
                              schema=schema, schema_ipc=schema_ipc, created_ms=int(time.time() * 1000),
                              writer=self.writer_id)
        name = commit_record_path(topic, partition, last_offset)
        self._write_atomic(name, encode_commit_record(record))
        self._cache[(topic, partition)] = (name, record)
        self._hook("after-commit-record")
        for item in files:
            self._move(item.staged_path, item.path)
        self._remove_staging_dir(staging_prefix(topic, partition))
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

    def _write_atomic(self, relative: str, data: bytes) -> None:
        path = self.abs(relative)
        if not self.local:
            with self.fs.open_output_stream(path) as stream:  # one PUT: atomic
                stream.write(data)
            return
        write_atomic(path, data, fsync=self.fsync)

    def _move(self, staged: str, final: str) -> None:
        if self.local:
            os.makedirs(os.path.dirname(self.abs(final)), exist_ok=True)
            os.replace(self.abs(staged), self.abs(final))
        else:
            self.fs.move(self.abs(staged), self.abs(final))  # copy + delete: idempotent on replay

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



"""The registration ledger: which edge files an Iceberg/Delta table already holds, crash-safe.

One ledger per (edge table root, target table), next to the edge files and keyed by the table's
UUID (a dropped and recreated table starts afresh). Both writers of a table go through it: the
``lakehouse register`` job and the data-lake sink's optional ``register_in_catalog``, so a file is
never registered twice, and since the ledger lives in the lake (not in the table's snapshots) it
survives ``expire_snapshots``::

    <table root>/_lakehouse/register/<table key>/batch-000001.json   intent: files of batch 1 and its writer
    <table root>/_lakehouse/register/<table key>/batch-000001.done   batch 1 is in the table
    <table root>/_lakehouse/register/<table key>/checkpoint-000050.json   batches 1..50 folded

The ``_`` prefix keeps it invisible to every reader of the lake (layout contract).

An intent is created exclusively on every store (:class:`~stream_edge.lake.exclusive_create.ExclusiveCreator`:
a link on a local disk, a conditional PUT ``If-None-Match: *`` on S3): of two writers racing for
batch N exactly one records it, the other gets :class:`LedgerError` and takes the next number
(:mod:`stream_edge.lake.registrar` holds that retry). Every writer claims ``max + 1`` of what it
listed, so batch N exists before N+1 is created and :meth:`RegistrationLedger.owned_files` sees
every lower batch: a file recorded by two writers is committed by exactly one.

Protocol: write the intent (exclusive create), commit the batch to the table *idempotently*
(the writer's last batch number is a table property set in the same commit:
``lakehouse.register.last-batch`` for the job, ``lakehouse.register.edge.<topic>.<partition>.last-batch``
for each edge partition, so concurrent writers never mistake each other's batches for theirs),
then write the done marker. A crash before the commit leaves an intent its writer commits on its
next run; a crash after it leaves an intent its writer finds already committed.

Pure Python over a pyarrow filesystem: the edge image uses it without Spark.

Example::

    >>> import tempfile, pyarrow.fs as pafs
    >>> root = tempfile.mkdtemp()
    >>> ledger = RegistrationLedger(pafs.LocalFileSystem(), root, "iceberg-0b3c", local=True)
    >>> batch = ledger.write_intent(ledger.next_number(), ["day=1/a.parquet"], "lake.db.t", writer="edge:t:0")
    >>> ledger.mark_done(batch.number)
    >>> [(b.number, b.files, b.done, b.writer) for b in ledger.batches()]
    [(1, ('day=1/a.parquet',), True, 'edge:t:0')]
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Iterable, List, Optional, Set, Tuple

from stream_edge.lake.durable import write_atomic
from stream_edge.lake.exclusive_create import ExclusiveCreator

__all__ = ("RegistrationLedger", "LedgerBatch", "LedgerError", "LEDGER_DIR", "JOB_WRITER",
           "JOB_BATCH_PROPERTY", "edge_writer", "edge_batch_property")

LEDGER_DIR = "_lakehouse/register"
JOB_WRITER = "job"
JOB_BATCH_PROPERTY = "lakehouse.register.last-batch"


def edge_writer(topic: str, partition: int) -> str:
    """The ledger writer name of one edge partition."""
    return f"edge:{topic}:{partition}"


def edge_batch_property(topic: str, partition: int) -> str:
    """The table property holding the last batch an edge partition committed."""
    return f"lakehouse.register.edge.{topic}.{partition}.last-batch"


class LedgerError(RuntimeError):
    """The ledger is unreadable, or another register run holds the same batch."""


@dataclass(frozen=True)
class LedgerBatch:
    number: int
    files: Tuple[str, ...]  # paths relative to the table root
    done: bool
    writer: str = JOB_WRITER  # who registers it: the register job, or "edge:<topic>:<partition>"


class RegistrationLedger:
    """Append-only list of registration batches for one (edge table root, target table).

    ``fs`` is a pyarrow filesystem, ``base`` the edge table root inside it (``bucket/prefix`` on
    S3), ``local`` whether it is a local disk. Both registration paths open this one class.
    """

    #: reads of the batch files retried when a concurrent fold deletes them mid-listing
    READ_ATTEMPTS = 3

    def __init__(self, fs: Any, base: str, table_key: str, local: bool) -> None:
        self.fs = fs
        self.local = local
        self.key = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in table_key)
        self.parent = f"{base}/{LEDGER_DIR}"
        self.dir = f"{self.parent}/{self.key}"
        self._create = ExclusiveCreator(fs, local=local)

    def sibling_keys(self) -> List[str]:
        """Keys of every table registered from this root (this one included)."""
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.parent, allow_not_found=True))
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)

    def _path(self, number: int, suffix: str) -> str:
        return f"{self.dir}/batch-{number:06d}.{suffix}"

    def _read(self, name: str) -> dict:
        try:
            with self.fs.open_input_stream(f"{self.dir}/{name}") as handle:
                return json.loads(handle.read())
        except (OSError, ValueError) as exc:
            raise LedgerError(f"registration ledger entry {self.dir}/{name} is unreadable: {exc}") from exc

    def _names(self) -> Set[str]:
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.dir, allow_not_found=True))
        return {i.base_name for i in infos if i.type == pafs.FileType.File}

    def batches(self) -> List[LedgerBatch]:
        """Every batch in number order; a checkpoint stands for all batches up to its number.

        Retried when a concurrent fold deletes the batch files being read (they go once the
        checkpoint that replaces them is written)."""
        for attempt in range(1, self.READ_ATTEMPTS + 1):
            try:
                return self._read_batches()
            except LedgerError:
                if attempt == self.READ_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _read_batches(self) -> List[LedgerBatch]:
        names = self._names()
        checkpoints = sorted(n for n in names if n.startswith("checkpoint-") and n.endswith(".json"))
        out: List[LedgerBatch] = []
        through = 0
        if checkpoints:
            doc = self._read(checkpoints[-1])
            through = int(doc["through_batch"])
            out.append(LedgerBatch(through, tuple(doc["files"]), True, "checkpoint"))
        for name in sorted(names):
            if not (name.startswith("batch-") and name.endswith(".json")):
                continue
            number = int(name[len("batch-"):-len(".json")])
            if number <= through:
                continue  # folded into the checkpoint (a crash stopped the clean-up)
            doc = self._read(name)
            out.append(LedgerBatch(number, tuple(doc["files"]), f"batch-{number:06d}.done" in names,
                                   str(doc.get("writer", JOB_WRITER))))
        return out

    def checkpoint(self, existing: Optional[Set[str]] = None, min_batches: int = 50,
                   listed: Optional[Callable[[str], bool]] = None) -> Optional[int]:
        """Fold the leading done batches into one checkpoint file; returns its batch number, or
        None if fewer than ``min_batches`` batches would be folded.

        Every writer folds (the job on every run, the sink's registrar after its commits), so the
        files a writer reads per registration stay bounded. ``existing``: the committed files a
        listing found (None: no listing, every path is kept); ``listed(path)``: whether that
        listing covered the path (default: all of them). A path is forgotten only when the
        listing covered it, did not find it, and it is gone now (a file compaction deleted can no
        longer be registered again; one committed after the listing is kept).
        """
        batches = self.batches()
        prefix = []
        for batch in batches:
            if not batch.done:
                break
            prefix.append(batch)
        folded = [b for b in prefix if not (b is batches[0] and self._is_checkpoint(b))]
        if len(folded) < min_batches:
            return None
        through = prefix[-1].number
        paths = {p for b in prefix for p in b.files}
        if existing is not None:
            candidates = [p for p in paths if p not in existing and (listed is None or listed(p))]
            paths -= set(self.missing(candidates))
        data = json.dumps({"through_batch": through, "files": sorted(paths),
                           "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}).encode()
        target = f"{self.dir}/checkpoint-{through:06d}.json"
        if self.local:
            write_atomic(target, data)
        else:
            with self.fs.open_output_stream(target) as handle:
                handle.write(data)
        # The checkpoint is durable: what it replaces can go (readers skip it anyway). Only what
        # it replaces: a newer checkpoint another writer folded meanwhile stays.
        for name in self._names():
            if (name.startswith("batch-") and int(name[6:12]) <= through) or \
                    (name.startswith("checkpoint-") and name.endswith(".json") and int(name[11:17]) < through):
                try:
                    self.fs.delete_file(f"{self.dir}/{name}")
                except FileNotFoundError:
                    pass  # another writer's fold removed it first
        return through

    def missing(self, relative_paths: Iterable[str]) -> List[str]:
        """The paths (relative to the table root) that no longer exist, e.g. compacted and deleted."""
        import pyarrow.fs as pafs

        paths = list(relative_paths)
        if not paths:
            return []
        base = self.parent[: -len(LEDGER_DIR) - 1]
        infos = self.fs.get_file_info([f"{base}/{p}" for p in paths])
        return [p for p, info in zip(paths, infos) if info.type == pafs.FileType.NotFound]

    def _is_checkpoint(self, batch: LedgerBatch) -> bool:
        return any(n == f"checkpoint-{batch.number:06d}.json" for n in self._names())

    def owned_files(self, number: int) -> List[str]:
        """The files of batch ``number`` that no lower-numbered batch lists.

        Two writers may record the same file (the job listed it while the sink was registering
        it); the lowest-numbered batch owns it and only its writer commits it, so every file is
        in the table once.
        """
        earlier: Set[str] = set()
        mine: Tuple[str, ...] = ()
        for batch in self.batches():
            if batch.number < number:
                earlier.update(batch.files)
            elif batch.number == number:
                mine = batch.files
        return [f for f in mine if f not in earlier]

    def registered(self) -> Set[str]:
        """Relative paths of every file in any batch (committed, or pending and about to be)."""
        return {path for batch in self.batches() for path in batch.files}

    def next_number(self) -> int:
        """The number after the highest batch recorded."""
        return max((b.number for b in self.batches()), default=0) + 1

    def writer_of(self, number: int) -> Optional[str]:
        """The writer recorded in batch ``number``'s intent (None if there is none)."""
        for batch in self.batches():
            if batch.number == number:
                return batch.writer
        return None

    def write_intent(self, number: int, files: List[str], table: str, writer: str = JOB_WRITER) -> LedgerBatch:
        """Durably and exclusively record batch ``number`` before it is committed to the table
        (:class:`LedgerError` if that number is taken). The intent carries a claim token of its
        own, so a retried create can tell its own intent from another writer's."""
        doc = {"batch": number, "table": table, "writer": writer, "files": files, "claim": uuid.uuid4().hex,
               "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self.fs.create_dir(self.dir, recursive=True)
        try:
            self._create(self._path(number, "json"), json.dumps(doc, indent=0).encode())
        except FileExistsError:
            raise LedgerError(f"registration batch {number} already exists in {self.dir}: another writer (an edge "
                              "partition, or another register run) claimed it first") from None
        return LedgerBatch(number, tuple(files), False, writer)

    def mark_done(self, number: int) -> None:
        with self.fs.open_output_stream(self._path(number, "done")) as handle:
            handle.write(b"committed\n")

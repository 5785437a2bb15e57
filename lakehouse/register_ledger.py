"""The registration ledger: which edge files a table already holds, crash-safe.

A table's own metadata forgets a registered edge file once compaction has rewritten it and the
old snapshot expired (Iceberg) -- but the file may still sit in the lake for a while, and
registering it again would duplicate its rows. So the register job keeps its own ledger next
to the edge files, keyed by the table's UUID (a dropped and recreated table starts afresh):

    <table root>/_lakehouse/register/<table uuid>/batch-000001.json   intent: files of batch 1
    <table root>/_lakehouse/register/<table uuid>/batch-000001.done   batch 1 is in the table

The ``_`` prefix keeps it invisible to every reader of the lake (layout contract).

Protocol (see ``lakehouse.register``): write the intent (exclusive create), commit the batch to
the table *idempotently* (Iceberg: the batch number is a table property set in the same
transaction; Delta: ``txnAppId``/``txnVersion``), then write the done marker. A crash before the
commit leaves an intent that the next run commits; a crash after it leaves an intent that the
next run finds already committed. Either way no file is lost or registered twice.

Example::

    ledger = RegistrationLedger(LakeLocation.parse("/lake/t"), table_uuid)
    pending = [b for b in ledger.batches() if not b.done]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone

from lakehouse.lake_files import LakeLocation
from stream_edge.lake.durable import write_atomic

LEDGER_DIR = "_lakehouse/register"


class LedgerError(RuntimeError):
    """The ledger is unreadable, or another register run holds the same batch."""


@dataclass(frozen=True)
class LedgerBatch:
    number: int
    files: tuple[str, ...]  # paths relative to the table root
    done: bool


class RegistrationLedger:
    """Append-only list of registration batches for one (edge table root, target table)."""

    def __init__(self, root: LakeLocation, table_key: str) -> None:
        self.root = root
        self.fs, base = root.filesystem()
        self.key = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in table_key)
        self.parent = f"{base}/{LEDGER_DIR}"
        self.dir = f"{self.parent}/{self.key}"

    def sibling_keys(self) -> list[str]:
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

    def _names(self) -> set[str]:
        import pyarrow.fs as pafs

        infos = self.fs.get_file_info(pafs.FileSelector(self.dir, allow_not_found=True))
        return {i.base_name for i in infos if i.type == pafs.FileType.File}

    def batches(self) -> list[LedgerBatch]:
        """Every batch in number order; a checkpoint stands for all batches up to its number."""
        names = self._names()
        checkpoints = sorted(n for n in names if n.startswith("checkpoint-") and n.endswith(".json"))
        out: list[LedgerBatch] = []
        through = 0
        if checkpoints:
            doc = self._read(checkpoints[-1])
            through = int(doc["through_batch"])
            out.append(LedgerBatch(through, tuple(doc["files"]), True))
        for name in sorted(names):
            if not (name.startswith("batch-") and name.endswith(".json")):
                continue
            number = int(name[len("batch-"):-len(".json")])
            if number <= through:
                continue  # folded into the checkpoint (a crash stopped the clean-up)
            doc = self._read(name)
            out.append(LedgerBatch(number, tuple(doc["files"]), f"batch-{number:06d}.done" in names))
        return out

    def checkpoint(self, existing: set[str], min_batches: int = 50) -> int | None:
        """Fold the leading done batches into one checkpoint file, keeping only paths that still
        exist (``existing``: every committed file under the root, from a full listing).

        Keeps the ledger small: a file that compaction deleted can no longer be re-registered, so
        it need not be remembered. Returns the checkpoint's batch number, or None if not worth it.
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
        files = sorted({p for b in prefix for p in b.files} & existing)
        data = json.dumps({"through_batch": through, "files": files,
                           "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}).encode()
        target = f"{self.dir}/checkpoint-{through:06d}.json"
        if self.root.is_local:
            write_atomic(target, data)
        else:
            with self.fs.open_output_stream(target) as handle:
                handle.write(data)
        # The checkpoint is durable: what it replaces can go (readers skip it anyway).
        for name in self._names():
            if name.startswith("batch-") and int(name[6:12]) <= through or \
                    (name.startswith("checkpoint-") and name != f"checkpoint-{through:06d}.json"):
                self.fs.delete_file(f"{self.dir}/{name}")
        return through

    def _is_checkpoint(self, batch: LedgerBatch) -> bool:
        return any(n == f"checkpoint-{batch.number:06d}.json" for n in self._names())

    def registered(self) -> set[str]:
        """Relative paths of every file in any batch (committed, or pending and about to be)."""
        return {path for batch in self.batches() for path in batch.files}

    def write_intent(self, number: int, files: list[str], table: str) -> LedgerBatch:
        """Durably record batch ``number`` before it is committed to the table."""
        doc = {"batch": number, "table": table, "files": files,
               "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        data = json.dumps(doc, indent=0).encode()
        self.fs.create_dir(self.dir, recursive=True)
        target = self._path(number, "json")
        if self.root.is_local:
            # Exclusive create: a second register run racing for the same batch fails here
            # instead of registering the same files twice.
            try:
                write_atomic(target, data, exclusive=True)
            except FileExistsError:
                raise LedgerError(
                    f"registration batch {number} already exists in {self.dir}: is another "
                    "register run working on this table?"
                ) from None
        else:
            if self.fs.get_file_info(target).type != 0:  # 0 = NotFound
                raise LedgerError(f"registration batch {number} already exists in {self.dir}")
            with self.fs.open_output_stream(target) as handle:  # an S3 PUT is atomic
                handle.write(data)
        return LedgerBatch(number, tuple(files), False)

    def mark_done(self, number: int) -> None:
        with self.fs.open_output_stream(self._path(number, "done")) as handle:
            handle.write(b"committed\n")

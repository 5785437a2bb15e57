"""The commit protocol of the lake: record format and every decision, as pure functions.

One flush of one topic partition is one commit::

    0. own      (first flush after the partition was assigned) claim the next slot of the log
    1. stage    write each data file under _tmp/<topic>/<partition>/e<epoch>/...   (invisible)
    2. commit   create _commits/<topic>/<partition>/<next slot>.json exclusively  (THE commit)
    3. publish  move each staged file to its final hive path                        (visible)
    4. (runtime) commit the Kafka offsets

The commit log of a partition is a sequence of slots 0, 1, 2, ..., each a commit record created
only if absent (an exclusive link locally, a conditional PUT on S3), so of two writers that read
the same newest slot, exactly one writes the next. A record is a ``commit`` (files written) or a
``claim`` (a new owner took the partition: a copy of the commit below it with a higher epoch);
the ownership rules are in :mod:`.fencing`.

The commit record is the single source of truth: a file is committed iff a commit record lists
it. Publishing is idempotent and rolled forward after a crash, so what readers eventually see is
exactly the committed files. On restart (and before every flush) the writer reads the newest
record of its partition and

- publishes the staged files of that record that are still staged (crash during step 3),
- deletes every other staged file of its own or an older epoch (never committed, and after the
  claim never committable),
- skips records with ``offset <= last_offset`` (crash between 2/3 and 4: Kafka replays them).

Example::

    >>> rec = CommitRecord("t", 0, 10, 19, files=[CommittedFile("year=2024/part-x.parquet", "_tmp/t/0/x", 10)])
    >>> decode_commit_record(encode_commit_record(rec)) == rec
    True
    >>> first_unwritten_index([8, 9, 19, 20, 21], last_committed_offset=19)
    3
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .naming import commit_record_slot, staged_file_epoch

__all__ = (
    "FORMAT_VERSION", "CommittedFile", "CommitRecord", "CommitLogError", "encode_commit_record",
    "decode_commit_record", "latest_commit_name", "first_unwritten_index", "RecoveryPlan",
    "plan_recovery", "committed_files", "names_to_prune", "COMMIT", "CLAIM", "READABLE_VERSIONS",
)

FORMAT_VERSION = 2  # 2: epoch and kind (commit or claim); 1 (no fencing) is still read, as epoch 0
READABLE_VERSIONS = (1, 2)
COMMIT, CLAIM = "commit", "claim"


class CommitLogError(ValueError):
    """A commit record cannot be read: the lake's state cannot be trusted without operator action."""


@dataclass(frozen=True)
class CommittedFile:
    """One data file of a commit: final path, staging path (both relative to the table root)."""

    path: str
    staged_path: str
    rows: int
    partition_values: Tuple[Tuple[str, Optional[str]], ...] = ()


@dataclass(frozen=True)
class CommitRecord:
    """What one commit of one topic partition wrote.

    ``last_offset`` is the highest Kafka offset contained: every record of the partition up to it
    that reached the sink is in the lake. ``schema`` maps column name to type text (for type
    conflict checks across restarts); ``schema_ipc`` is the exact Arrow schema (base64, optional).
    ``epoch`` is the owner epoch of the writer (see :mod:`.fencing`); ``kind`` is ``"commit"`` or
    ``"claim"`` (an ownership claim repeating the commit below it; ``last_offset`` -1 when there
    was none).
    """

    topic: str
    partition: int
    first_offset: int
    last_offset: int
    files: List[CommittedFile] = field(default_factory=list)
    rows: int = 0
    schema: Dict[str, str] = field(default_factory=dict)
    schema_ipc: str = ""
    created_ms: int = 0
    writer: str = ""
    version: int = FORMAT_VERSION
    epoch: int = 0
    kind: str = COMMIT

    def __post_init__(self) -> None:
        if self.kind not in (COMMIT, CLAIM):
            raise CommitLogError(f"commit {self.topic}[{self.partition}]: unknown record kind {self.kind!r}")
        if self.last_offset < self.first_offset:
            raise CommitLogError(f"commit {self.topic}[{self.partition}]: last offset {self.last_offset} "
                                 f"< first offset {self.first_offset}")


def encode_commit_record(record: CommitRecord) -> bytes:
    body = {
        "version": record.version, "topic": record.topic, "partition": record.partition,
        "first_offset": record.first_offset, "last_offset": record.last_offset, "rows": record.rows,
        "created_ms": record.created_ms, "writer": record.writer, "schema": record.schema,
        "schema_ipc": record.schema_ipc, "epoch": record.epoch, "kind": record.kind,
        "files": [{"path": f.path, "staged_path": f.staged_path, "rows": f.rows,
                   "partition_values": [list(p) for p in f.partition_values]} for f in record.files],
    }
    return json.dumps(body, ensure_ascii=False, sort_keys=True).encode("utf-8")


def decode_commit_record(data: bytes, source: str = "<commit record>") -> CommitRecord:
    try:
        body = json.loads(data.decode("utf-8"))
        if body.get("version") not in READABLE_VERSIONS:
            raise CommitLogError(f"{source}: unsupported commit record version {body.get('version')!r}")
        return CommitRecord(
            topic=body["topic"], partition=int(body["partition"]),
            first_offset=int(body["first_offset"]), last_offset=int(body["last_offset"]),
            files=[CommittedFile(f["path"], f["staged_path"], int(f["rows"]),
                                 tuple((c, v) for c, v in f.get("partition_values", ())))
                   for f in body["files"]],
            rows=int(body.get("rows", 0)), schema=dict(body.get("schema", {})),
            schema_ipc=body.get("schema_ipc", ""), created_ms=int(body.get("created_ms", 0)),
            writer=body.get("writer", ""), version=body["version"],
            epoch=int(body.get("epoch", 0)), kind=body.get("kind", COMMIT),
        )
    except CommitLogError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise CommitLogError(f"{source}: corrupt commit record ({exc})") from exc


def latest_commit_name(names: Iterable[str]) -> Optional[str]:
    """The newest commit log entry among listed names (highest slot); temp/foreign names ignored."""
    best, best_slot = None, -1
    for name in names:
        slot = commit_record_slot(name)
        if slot is not None and slot > best_slot:
            best, best_slot = name, slot
    return best


def first_unwritten_index(offsets: Sequence[int], last_committed_offset: Optional[int]) -> int:
    """Index of the first record of a batch (offsets ascending) not yet in the lake.

    Records at or below the last committed offset were written by an earlier commit (e.g. the
    process died after the lake commit but before the Kafka offset commit) and must be skipped.
    """
    if last_committed_offset is None:
        return 0
    return bisect.bisect_right(offsets, last_committed_offset)


@dataclass(frozen=True)
class RecoveryPlan:
    """What to do with the staging area of one partition before writing again."""

    publish: List[Tuple[str, str]]   # (staged path, final path): committed but not yet visible
    delete: List[str]                # staged paths never committed (or already published)
    keep: List[str] = field(default_factory=list)  # staged by a newer owner: not ours to touch

    @property
    def empty(self) -> bool:
        return not self.publish and not self.delete


def plan_recovery(latest: Optional[CommitRecord], staged_paths: Iterable[str],
                  existing_final_paths: Iterable[str] = (), owner_epoch: Optional[int] = None) -> RecoveryPlan:
    """Roll the newest commit forward and drop everything else in the staging area.

    Only the newest commit can be partly published: a writer finishes publishing (or recovers)
    before it writes the next record. A staged file whose final file already exists was published
    by a move that did not get to delete its source (S3 moves are copy + delete).

    With ``owner_epoch`` (the planning writer owns the partition with that epoch, its claim is in
    the log), only files staged under that epoch or an older one may be deleted: an older owner
    can no longer commit them (its next slot is taken), while a file of a newer epoch belongs to a
    writer that may be about to commit it (then this writer is fenced, see :mod:`.fencing`).
    """
    staged = set(staged_paths)
    existing = set(existing_final_paths)
    committed = {f.staged_path: f.path for f in latest.files} if latest is not None else {}
    publish, delete, keep = [], [], []
    for path in sorted(staged):
        final = committed.get(path)
        if final is not None and final not in existing:
            publish.append((path, final))
        elif owner_epoch is not None and staged_file_epoch(path) > owner_epoch:
            keep.append(path)
        else:
            delete.append(path)
    return RecoveryPlan(publish, delete, keep)


def committed_files(records: Iterable[CommitRecord]) -> List[str]:
    """Final paths of every data file the given commit records made visible, in commit order
    (claims repeat the files of the commit below them: they are skipped)."""
    out: List[str] = []
    for record in sorted(records, key=lambda r: (r.topic, r.partition, r.last_offset)):
        if record.kind == COMMIT:
            out.extend(f.path for f in record.files)
    return out


def names_to_prune(names: Iterable[str], keep: int) -> List[str]:
    """Commit log entries beyond the newest ``keep`` (oldest first). The newest is always kept
    (a claim repeats the commit below it, so the newest entry alone says what is committed)."""
    keep = max(1, keep)
    slotted = ((commit_record_slot(n), n) for n in names)
    records = sorted((slot, n) for slot, n in slotted if slot is not None)
    return [name for _, name in records[:-keep]] if len(records) > keep else []

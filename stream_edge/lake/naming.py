"""Where things live under a table root: data files, staging area, commit log.

Layout (all paths relative to the table root ``<storage_url>/<s3_prefix>/<table_name>``)::

    <hive path>/part-<topic>-p<partition>-o<first>-<last>.parquet   committed data (visible)
    _tmp/<topic>/<partition>/e<epoch>/<first>-<last>/<hive path>/<file>   staged data (invisible)
    _commits/<topic>/<partition>/<slot, 20 digits>.json                    the commit log

The commit log of a partition is a sequence of numbered slots, each created exclusively (see
:mod:`.commit_log` and :mod:`.fencing`); each writer stages under the epoch it owns the partition
with, so an owner never deletes what a newer owner staged.
Readers (Spark, Hive, pyarrow datasets) skip names that start with ``_`` or ``.`` unless they
contain ``=``, so ``_tmp`` and ``_commits`` are never read as data. Offsets and slots are
zero-padded so that names sort in number order. (Lakes written before the fencing named each
commit record by its last offset: those numbers are slots too, as they only ever grew.)

Example::

    >>> data_file_name("sensors", 1, 100, 250)
    'part-sensors-p1-o00000000000000000100-00000000000000000250.parquet'
    >>> commit_record_path("sensors", 1, 250)
    '_commits/sensors/1/00000000000000000250.json'
    >>> staged_file_epoch(staged_file_path("sensors", 1, 100, 250, "day=1", epoch=7))
    7
"""

from __future__ import annotations

import re
from typing import Optional, Tuple

from .partitioning import escape_path_name

__all__ = (
    "STAGING_DIR", "COMMITS_DIR", "DATA_FILE_PREFIX", "table_root", "data_file_name",
    "parse_data_file_name", "staging_prefix", "staged_file_path", "final_file_path",
    "commit_dir", "commit_record_path", "commit_record_slot", "is_hidden_name", "join",
    "staging_epoch_prefix", "staged_file_epoch",
)

STAGING_DIR = "_tmp"
COMMITS_DIR = "_commits"
DATA_FILE_PREFIX = "part-"
_OFFSET_WIDTH = 20

_DATA_FILE_RE = re.compile(r"^part-(?P<topic>.+)-p(?P<partition>\d+)-o(?P<first>\d{20})-(?P<last>\d{20})(?P<ext>\..+)$")
_COMMIT_RE = re.compile(r"^(?P<slot>\d{20})\.json$")
_EPOCH_RE = re.compile(r"^e(?P<epoch>\d+)$")


def join(*parts: str) -> str:
    """Join relative path parts with ``/``, skipping empty ones."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def table_root(base: str, prefix: str, table_name: str) -> str:
    """``<base>/<prefix>/<table_name>`` without doubled slashes; the table name must be one level."""
    if not table_name or "/" in table_name or table_name in (".", ".."):
        raise ValueError(f"table_name must be a single path component, got {table_name!r}")
    if any(part in (".", "..") for part in (prefix or "").split("/")):
        raise ValueError(f"s3_prefix must not contain '.' or '..' components, got {prefix!r}")
    root = base.rstrip("/")
    middle = (prefix or "").strip("/")
    return f"{root}/{middle}/{table_name}" if middle else f"{root}/{table_name}"


def _topic_component(topic: str) -> str:
    if not topic:
        raise ValueError("topic name must not be empty")
    if topic in (".", ".."):
        # Not a legal Kafka topic name, but never let it become a path level of its own.
        return topic.replace(".", "%2E")
    return escape_path_name(topic)


def data_file_name(topic: str, partition: int, first_offset: int, last_offset: int,
                   extension: str = ".parquet") -> str:
    """Deterministic data file name: one file per hive path per commit of one topic partition."""
    if last_offset < first_offset:
        raise ValueError(f"last offset {last_offset} < first offset {first_offset}")
    return (f"{DATA_FILE_PREFIX}{_topic_component(topic)}-p{partition}-o{first_offset:0{_OFFSET_WIDTH}d}"
            f"-{last_offset:0{_OFFSET_WIDTH}d}{extension}")


def parse_data_file_name(name: str) -> Optional[Tuple[str, int, int, int]]:
    """``(escaped topic, partition, first, last)`` of a data file name, None if not one of ours."""
    match = _DATA_FILE_RE.match(name.rsplit("/", 1)[-1])
    if not match:
        return None
    return match["topic"], int(match["partition"]), int(match["first"]), int(match["last"])


def staging_prefix(topic: str, partition: int) -> str:
    """The staging folder of one topic partition (everything below it is invisible)."""
    return f"{STAGING_DIR}/{_topic_component(topic)}/{partition}"


def staging_epoch_prefix(topic: str, partition: int, epoch: int) -> str:
    """The staging folder of one owner (epoch) of a topic partition: only that owner writes in it."""
    return f"{staging_prefix(topic, partition)}/e{epoch}"


def staged_file_path(topic: str, partition: int, first_offset: int, last_offset: int, hive_path: str,
                     extension: str = ".parquet", *, epoch: int = 0) -> str:
    name = data_file_name(topic, partition, first_offset, last_offset, extension)
    return join(staging_epoch_prefix(topic, partition, epoch),
                f"{first_offset:0{_OFFSET_WIDTH}d}-{last_offset:0{_OFFSET_WIDTH}d}", hive_path, name)


def staged_file_epoch(path: str) -> int:
    """The owner epoch a staged path (relative to the table root) was written under.

    0 for paths staged before epochs existed (``_tmp/<topic>/<partition>/<first>-<last>/...``):
    older than any owner's, as they were.
    """
    parts = path.split("/")
    match = _EPOCH_RE.match(parts[3]) if len(parts) > 4 and parts[0] == STAGING_DIR else None
    return int(match["epoch"]) if match else 0


def final_file_path(topic: str, partition: int, first_offset: int, last_offset: int, hive_path: str,
                    extension: str = ".parquet") -> str:
    return join(hive_path, data_file_name(topic, partition, first_offset, last_offset, extension))


def commit_dir(topic: str, partition: int) -> str:
    return f"{COMMITS_DIR}/{_topic_component(topic)}/{partition}"


def commit_record_path(topic: str, partition: int, slot: int) -> str:
    """The commit log entry of ``slot`` (0, 1, 2, ...: one per commit or ownership claim)."""
    return f"{commit_dir(topic, partition)}/{slot:0{_OFFSET_WIDTH}d}.json"


def commit_record_slot(name: str) -> Optional[int]:
    """The slot encoded in a commit log entry's file name, None for other names (temp files)."""
    match = _COMMIT_RE.match(name.rsplit("/", 1)[-1])
    return int(match["slot"]) if match else None


def is_hidden_name(name: str) -> bool:
    """True when Spark/Hadoop input listing skips this file or folder name (``_x``, ``.x``)."""
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")

"""Discovery of the committed data files the edge's data-lake sink wrote under one table root.

The layout is the shared contract of ``docs/design.md`` ("Lake layout contract"): a table root
``<storage_url>/<s3_prefix>/<table_name>/``, one ``col=value/`` directory per Hive column,
Hive-escaped values, the Hive default partition name for NULL, and data files that stay
invisible (``_``/``.`` prefix, or under ``_tmp/``) until the sink commits them. Only visible
``*.parquet`` files are committed data; everything hidden (commit log, temp files, our own
registration ledger under ``_lakehouse/``) is skipped.

Example::

    from lakehouse.lake_files import LakeLocation, list_committed_files
    root = LakeLocation.parse("file:///data/lake/time-series/sensor_readings")
    for f in list_committed_files(root, since=None):
        print(f.relative_path, f.partition, f.size)
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Iterator

from stream_edge.lake import (  # the edge's layout code: one source of truth for paths
    DEFAULT_PARTITION_NAME as HIVE_DEFAULT_PARTITION,
    is_hidden_name,
    unescape_path_name,
)
from stream_edge.lake.s3_settings import S3Settings


class LakeLayoutError(ValueError):
    """A file under the table root does not follow the layout contract."""


def is_hidden(name: str) -> bool:
    """Invisible to readers until committed (``_x``, ``.x``; ``_col=v`` is a partition)."""
    return is_hidden_name(name)


def unescape_partition_value(text: str) -> str | None:
    """Hive/Spark path unescaping (``%2F`` -> ``/``); the Hive default partition name is NULL.

    >>> unescape_partition_value("a%2Fb"), unescape_partition_value(HIVE_DEFAULT_PARTITION)
    ('a/b', None)
    """
    if text == HIVE_DEFAULT_PARTITION:
        return None
    return unescape_path_name(text)


@dataclass(frozen=True)
class LakeLocation:
    """A table root, as a URI Spark understands and as a pyarrow filesystem + path.

    ``s3://`` and ``s3a://`` both work: Spark and Iceberg get ``s3a://`` (hadoop-aws), pyarrow
    gets its own S3 filesystem with the settings the edge resolves too
    (:meth:`stream_edge.lake.s3_settings.S3Settings.from_env`: ``AWS_ENDPOINT_URL_S3``,
    ``AWS_ENDPOINT_URL``, ``S3_ENDPOINT``, the region, keys and session token).
    """

    uri: str  # normalised: file:///abs/path or s3a://bucket/key (no trailing slash)

    @classmethod
    def parse(cls, text: str) -> "LakeLocation":
        text = text.strip().rstrip("/")
        if not text:
            raise LakeLayoutError("the lake table root is empty")
        if "://" not in text and not text.startswith("file:"):
            return cls("file://" + os.path.abspath(text))
        scheme, rest = text.split(":", 1)
        scheme = scheme.lower()
        if scheme == "file":
            return cls("file://" + os.path.abspath("/" + rest.lstrip("/")))
        if scheme in ("s3", "s3a"):
            return cls("s3a:" + rest)
        raise LakeLayoutError(f"unsupported lake URI scheme {scheme!r} in {text!r} (use file://, s3:// or s3a://)")

    @property
    def is_local(self) -> bool:
        return self.uri.startswith("file://")

    def child(self, relative: str) -> str:
        """URI of a path relative to this root."""
        return f"{self.uri}/{relative}" if relative else self.uri

    def filesystem(self):
        """(pyarrow FileSystem, root path inside it)."""
        import pyarrow.fs as pafs

        if self.is_local:
            return pafs.LocalFileSystem(), self.uri[len("file://"):]
        return S3Settings.from_env().filesystem(), self.uri[len("s3a://"):]


@dataclass(frozen=True)
class EdgeFile:
    """One committed data file: its path relative to the table root and its partition."""

    relative_path: str
    partition: tuple[tuple[str, str | None], ...]  # (column, unescaped value) in path order
    size: int
    raw_partition_path: str = field(default="")  # the escaped ``a=1/b=2`` directory part

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return tuple(col for col, _ in self.partition)

    def partition_dict(self) -> dict[str, str | None]:
        return dict(self.partition)


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """``--since`` value: ISO date/time (UTC unless an offset is given) or a relative age.

    >>> parse_since("2024-01-02T03:00").isoformat()
    '2024-01-02T03:00:00+00:00'
    >>> parse_since("90m", now=datetime(2024, 1, 1, 12, tzinfo=timezone.utc)).isoformat()
    '2024-01-01T10:30:00+00:00'
    """
    if text is None or text == "":
        return None
    now = now or datetime.now(timezone.utc)
    match = re.fullmatch(r"\s*(\d+)\s*([smhdw])\s*", text)
    if match:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
        return now - timedelta(**{unit: int(match.group(1))})
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"--since {text!r} is neither an ISO date/time (2024-01-31, 2024-01-31T06:00) "
            f"nor a relative age (30m, 6h, 2d, 1w)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def partition_time_end(values: dict[str, str | None]) -> datetime | None:
    """Exclusive upper bound of the time a (possibly partial) partition covers, or None.

    Uses the time columns of the contract (``year``/``month``/``day``/``hour``, UTC) that are
    known so far, in that order; a directory level can therefore be pruned before listing it.
    """
    try:
        year = values.get("year")
        if year is None:
            return None
        start = datetime(int(year), 1, 1, tzinfo=timezone.utc)
        month = values.get("month")
        if month is None:
            return start.replace(year=start.year + 1)
        start = start.replace(month=int(month))
        day = values.get("day")
        if day is None:
            return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(month=start.month + 1)
        start = start.replace(day=int(day))
        hour = values.get("hour")
        if hour is None:
            return start + timedelta(days=1)
        return start.replace(hour=int(hour)) + timedelta(hours=1)
    except (TypeError, ValueError):
        return None  # not a date we understand: never prune what we cannot read


def list_committed_files(root: LakeLocation, since: datetime | None = None) -> Iterator[EdgeFile]:
    """Yield every committed (visible) Parquet data file under ``root``, in path order.

    With ``since``, partitions whose time range ends at or before it are not listed at all.
    Raises :class:`LakeLayoutError` for a visible file whose directories are not ``col=value``
    or whose partition columns differ from the other files'.
    """
    import pyarrow.fs as pafs

    fs, base = root.filesystem()
    info = fs.get_file_info(base)
    if info.type == pafs.FileType.NotFound:
        return
    columns: tuple[str, ...] | None = None
    stack: list[tuple[str, tuple[tuple[str, str | None], ...], str]] = [(base, (), "")]
    while stack:
        directory, partition, rel_dir = stack.pop()
        entries = sorted(fs.get_file_info(pafs.FileSelector(directory, recursive=False)),
                         key=lambda e: e.base_name, reverse=True)
        for entry in entries:
            name = entry.base_name
            if is_hidden(name):
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if entry.type == pafs.FileType.Directory:
                col, sep, raw = name.partition("=")
                if not sep or not col:
                    raise LakeLayoutError(
                        f"directory {root.child(rel)!r} is not a Hive partition (col=value): "
                        "the table root must hold only partition directories and data files"
                    )
                part = partition + ((unescape_path_name(col), unescape_partition_value(raw)),)
                if since is not None:
                    end = partition_time_end(dict(part))
                    if end is not None and end <= since:
                        continue
                stack.append((entry.path, part, rel))
            elif entry.type == pafs.FileType.File and name.endswith(".parquet"):
                cols = tuple(c for c, _ in partition)
                if columns is None:
                    columns = cols
                elif cols != columns:
                    raise LakeLayoutError(
                        f"file {root.child(rel)!r} has partition columns {list(cols)}, "
                        f"other files have {list(columns)}"
                    )
                yield EdgeFile(relative_path=rel, partition=partition, size=entry.size,
                               raw_partition_path=rel_dir)


def edge_file_at(root: LakeLocation, relative_path: str) -> EdgeFile:
    """The :class:`EdgeFile` for one known path (e.g. from the registration ledger)."""
    import pyarrow.fs as pafs

    fs, base = root.filesystem()
    info = fs.get_file_info(f"{base}/{relative_path}")
    if info.type != pafs.FileType.File:
        raise LakeLayoutError(f"file {root.child(relative_path)!r} is missing")
    dirs = relative_path.split("/")[:-1]
    partition = []
    for name in dirs:
        col, sep, raw = name.partition("=")
        if not sep:
            raise LakeLayoutError(f"path {relative_path!r} has a non-partition directory {name!r}")
        partition.append((unescape_path_name(col), unescape_partition_value(raw)))
    return EdgeFile(relative_path=relative_path, partition=tuple(partition), size=info.size,
                    raw_partition_path="/".join(dirs))

"""Orphan files of an Iceberg table, found and deleted through pyiceberg (no Spark, no JVM).

An orphan is a file under the table's location that no metadata file, snapshot, manifest or
statistics file of the table references: what a killed writer leaves behind. Iceberg's
``remove_orphan_files`` procedure does this from Spark, but refuses a cutoff newer than 24 hours
(a commit in flight has files no snapshot references yet). The jobs use the procedure by default;
this module is the path past that check, taken only when the user passed
``--allow-unsafe-retention`` (a test, a table nobody else writes): it lists the location, subtracts
every referenced file, and deletes what is left and older than the cutoff.

Paths are compared without their scheme (``s3://b/k``, ``s3a://b/k`` and a listing's ``b/k`` are
one file; so are ``file:/p``, ``file:///p`` and ``/p``). Before deleting anything it checks that
every referenced file it could see is in the listing: if not, the two sides name files
differently and it stops with an error rather than delete live files.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Iterable
from urllib.parse import urlparse

__all__ = ("OrphanFileError", "comparable_path", "find_orphans", "remove_orphans")

log = logging.getLogger(__name__)

#: files a catalog keeps beside the metadata that no metadata file names (Hadoop catalogs' hint)
_CATALOG_FILES = ("version-hint.text",)


class OrphanFileError(RuntimeError):
    """The listing and the table's metadata do not name files the same way: nothing was deleted."""


def comparable_path(path: str) -> str:
    """``path`` without its scheme, so a metadata reference and a listing entry compare equal.

    >>> comparable_path("s3a://bucket/wh/t/data/a.parquet"), comparable_path("bucket/wh/t/data/a.parquet")
    ('bucket/wh/t/data/a.parquet', 'bucket/wh/t/data/a.parquet')
    >>> comparable_path("file:///tmp/wh/a.parquet"), comparable_path("file:/tmp/wh/a.parquet")
    ('/tmp/wh/a.parquet', '/tmp/wh/a.parquet')
    """
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return "/" + parsed.path.lstrip("/") if parsed.scheme else path
    return f"{parsed.netloc}/{parsed.path.lstrip('/')}"


def find_orphans(listed: dict[str, datetime], referenced: Iterable[str], older_than: datetime,
                 must_exist: Iterable[str] = ()) -> list[str]:
    """The listed files (comparable path -> modification time) that nothing references and that
    are older than ``older_than``; refuses (``OrphanFileError``) when a file of ``must_exist``
    (the manifests, data and delete files) in a listed folder is missing from the listing.

    >>> from datetime import datetime as t
    >>> listed = {"b/t/data/a": t(2026, 1, 1), "b/t/data/b": t(2026, 1, 1), "b/t/data/c": t(2026, 1, 9)}
    >>> find_orphans(listed, ["s3://b/t/data/a"], older_than=t(2026, 1, 5), must_exist=["s3a://b/t/data/a"])
    ['b/t/data/b']
    >>> find_orphans(listed, ["s3://b/t/data/x"], older_than=t(2026, 1, 5), must_exist=["s3://b/t/data/x"])
    Traceback (most recent call last):
    ...
    lakehouse.orphan_files.OrphanFileError: 1 file(s) the table references are not in the listing of its location (e.g. 'b/t/data/x'): the metadata and the file system name files differently; nothing deleted
    """
    wanted = {comparable_path(path) for path in referenced}
    folders = {path.rsplit("/", 1)[0] for path in listed}
    checked = {comparable_path(path) for path in must_exist}
    missing = sorted(path for path in checked if path.rsplit("/", 1)[0] in folders and path not in listed)
    if missing:
        raise OrphanFileError(
            f"{len(missing)} file(s) the table references are not in the listing of its location (e.g. "
            f"{missing[0]!r}): the metadata and the file system name files differently; nothing deleted")
    return sorted(path for path, modified in listed.items()
                  if path not in wanted and modified < older_than and path.rsplit("/", 1)[-1] not in _CATALOG_FILES)


def referenced_files(table: Any) -> tuple[set[str], set[str]]:
    """Every file the pyiceberg ``table`` references (metadata files, current and logged; manifest
    lists; statistics files; manifests, data and delete files of every snapshot), and of those the
    manifests, data and delete files, which must exist."""
    metadata = table.metadata
    files = {table.metadata_location, *(entry.metadata_file for entry in metadata.metadata_log)}
    files.update(snapshot.manifest_list for snapshot in metadata.snapshots)
    files.update(stats.statistics_path for stats in metadata.statistics)
    files.update(stats.statistics_path for stats in getattr(metadata, "partition_statistics", []))
    content: set[str] = set()
    if metadata.snapshots:
        content.update(table.inspect.all_manifests().column("path").to_pylist())
        content.update(table.inspect.all_files().column("file_path").to_pylist())
    return files | content, content


def _listing(table: Any) -> tuple[Any, str, dict[str, datetime]]:
    from pyarrow.fs import FileSelector, FileType

    location = table.location()
    parsed = urlparse(location)
    if not hasattr(table.io, "fs_by_scheme"):
        raise OrphanFileError(f"listing {location} needs pyiceberg's PyArrowFileIO; the table's is "
                              f"{type(table.io).__name__} (set py-io-impl to pyiceberg.io.pyarrow.PyArrowFileIO)")
    fs = table.io.fs_by_scheme(parsed.scheme or "file", parsed.netloc)
    root = comparable_path(location)
    entries = fs.get_file_info(FileSelector(root, recursive=True, allow_not_found=True))
    listed = {comparable_path(info.path): info.mtime for info in entries if info.type == FileType.File}
    return fs, parsed.scheme, listed


def remove_orphans(table: Any, older_than: datetime) -> int:
    """Delete ``table``'s orphan files older than ``older_than`` (timezone-aware); how many."""
    fs, scheme, listed = _listing(table)
    referenced, content = referenced_files(table)
    orphans = find_orphans(listed, referenced, older_than, must_exist=content)
    for path in orphans:
        log.debug("deleting orphan file %s%s", f"{scheme}://" if scheme not in ("", "file") else "", path)
        fs.delete_file(path)
    return len(orphans)

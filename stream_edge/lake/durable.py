"""Durable atomic writes on a local disk: the one helper every local writer uses.

A reader sees either the previous file or the whole new one, never a part of it, and after the
call returns the new file survives a crash or power loss:

1. write a hidden temp file in the target's folder (same filesystem, so the rename is atomic),
2. fsync the temp file (its bytes are on disk),
3. rename it onto the target (``os.replace``), or link it when ``exclusive`` (fails if the target
   exists: two writers racing for one name cannot both win),
4. fsync the folder (the rename itself is on disk).

Used by the data-lake sink's commit records, the lakehouse registration ledger and the local
file destination of ``FileSink``. Object stores need none of this: one PUT is atomic.

Example::

    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> write_atomic(folder / "state.json", b'{"n": 1}')
    >>> (folder / "state.json").read_bytes()
    b'{"n": 1}'
    >>> sorted(p.name for p in folder.iterdir())  # no temp file left behind
    ['state.json']
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Union

__all__ = ("write_atomic", "fsync_dir", "TEMP_PREFIX")

TEMP_PREFIX = ".tmp-"  # hidden (Spark and the lake readers skip names starting with "." or "_")


def fsync_dir(folder: Union[str, Path]) -> None:
    """Make a rename or a new file in ``folder`` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Union[str, Path], data: bytes, *, fsync: bool = True, exclusive: bool = False) -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring).

    ``fsync=False`` keeps the atomicity but skips the durability (tests, scratch data).
    ``exclusive=True`` raises :class:`FileExistsError` if ``path`` exists, leaving it untouched.
    """
    target = os.fspath(path)
    folder = os.path.dirname(target) or "."
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f"{TEMP_PREFIX}{uuid.uuid4().hex}-{os.path.basename(target)}")
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, target)
        else:
            os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    if fsync:
        fsync_dir(folder)

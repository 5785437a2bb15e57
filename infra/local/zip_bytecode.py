"""Python zips with their byte code inside, for the suite's Spark home.

spark-submit puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip ahead of the installed
packages on the path of every Python process Spark starts (a submitted job's driver, the
executors' and local sessions' Python workers), and Python's zip importer never writes byte code:
each of those processes compiled pyspark's modules from source again (``import pyspark.sql``
costs 0.95 CPU-s from the zip, 0.33 from the installed package). The zip importer does read a
``module.pyc`` stored beside ``module.py``; :func:`copy_with_bytecode` writes one for every module:

- hash-checked against its source (the importer hashes the ``.py`` it reads next to it), so a
  stale ``.pyc`` is never used;
- for this interpreter only: another Python finds a foreign magic number and compiles the source,
  as it did before.

Example::

    copy_with_bytecode(Path("pyspark.zip"), Path("/tmp/pyspark.zip"))
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import warnings
import zipfile
from pathlib import Path

#: a checked hash-based pyc (PEP 552): bit 0 "hash-based", bit 1 "check the source"
_CHECKED_HASH = (0b11).to_bytes(4, "little")


def pyc_bytes(source: bytes, filename: str) -> bytes | None:
    """The ``.pyc`` content of one module for this interpreter (None when it does not compile:
    the importer then reports the error where the module is imported, as before)."""
    try:
        with warnings.catch_warnings():  # e.g. invalid escapes: the importer's compile would warn, not fail
            warnings.simplefilter("ignore")
            code = compile(source, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return None
    return importlib.util.MAGIC_NUMBER + _CHECKED_HASH + importlib.util.source_hash(source) + marshal.dumps(code)


def copy_with_bytecode(source: Path, target: Path, *, location: Path | None = None) -> int:
    """Copy the zip ``source`` to ``target``, adding a ``.pyc`` beside each ``.py`` that has none;
    returns how many were added.

    ``location`` is where the zip will be read from (``target`` by default): the code objects
    carry the file names the zip importer would have given them (``<zip>/<package>/<module>.py``),
    so tracebacks read the same.
    """
    where = location or target
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w") as dst:
        names = set(src.namelist())
        added = 0
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info, data)
            stem = info.filename[:-3]
            if not info.filename.endswith(".py") or f"{stem}.pyc" in names:
                continue
            pyc = pyc_bytes(data, os.path.join(where, *info.filename.split("/")))
            if pyc is not None:
                dst.writestr(zipfile.ZipInfo(f"{stem}.pyc", info.date_time), pyc)
                added += 1
    return added

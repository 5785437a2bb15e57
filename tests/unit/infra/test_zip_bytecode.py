"""Zips with byte code inside (infra/local/zip_bytecode.py): the zip importer loads the added
``.pyc``, its code carries the file name the importer would have given, a stale one is never
used, and whatever does not compile or is not Python is copied as it was."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from infra.local.zip_bytecode import copy_with_bytecode

_PROBE = """
import sys, pkg, pkg.mod
print(pkg.mod.__file__)
print(pkg.mod.where.__code__.co_filename)
print(pkg.mod.VALUE)
try:
    import pkg.broken
except SyntaxError as error:
    print("SyntaxError", error.filename)
"""


def _zip(path: Path, entries: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return path


def _probe(archive: Path) -> list[str]:
    run = subprocess.run([sys.executable, "-c", _PROBE], env={"PYTHONPATH": str(archive)},
                         capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


def _source_zip(tmp_path: Path, value: int) -> Path:
    return _zip(tmp_path / f"source-{value}.zip", {
        "pkg/__init__.py": "",
        "pkg/mod.py": f"VALUE = {value}\ndef where():\n    return 1\n",
        "pkg/broken.py": "def (:\n",
        "pkg/data.json": b'{"a": 1}',
    })


def test_modules_load_from_the_added_byte_code_with_the_importers_file_names(tmp_path: Path) -> None:
    target = tmp_path / "lib" / "pyspark.zip"
    target.parent.mkdir()

    added = copy_with_bytecode(_source_zip(tmp_path, 7), target)

    assert added == 2  # __init__ and mod; broken.py does not compile
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == ["pkg/__init__.py", "pkg/__init__.pyc", "pkg/broken.py",
                                              "pkg/data.json", "pkg/mod.py", "pkg/mod.pyc"]
        assert archive.read("pkg/data.json") == b'{"a": 1}'
    loaded_from, code_file, value, syntax = _probe(target)
    assert loaded_from == f"{target}/pkg/mod.pyc"
    assert code_file == f"{target}/pkg/mod.py"  # what compiling from the zip would have said
    assert value == "7"
    assert syntax == f"SyntaxError {target}/pkg/broken.py"  # reported where it is imported, as before


def test_the_code_names_the_zips_final_location(tmp_path: Path) -> None:
    target = tmp_path / "partial.zip"
    copy_with_bytecode(_source_zip(tmp_path, 1), target, location=Path("/opt/spark/python/lib/pyspark.zip"))

    assert _probe(target)[1] == "/opt/spark/python/lib/pyspark.zip/pkg/mod.py"


def test_byte_code_of_an_edited_source_is_not_used(tmp_path: Path) -> None:
    compiled = tmp_path / "compiled.zip"
    copy_with_bytecode(_source_zip(tmp_path, 1), compiled)
    with zipfile.ZipFile(compiled) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    entries["pkg/mod.py"] = b"VALUE = 2\ndef where():\n    return 2\n"  # the .pyc still holds VALUE = 1

    assert _probe(_zip(tmp_path / "edited.zip", entries))[2] == "2"

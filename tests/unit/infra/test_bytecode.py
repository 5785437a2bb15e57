"""The set-up's byte-compile step (infra/local/bytecode.py): it writes byte code for what it
imports even where the environment says not to, and an uninstalled optional package is no error."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.local.bytecode import compile_imported


def test_imported_modules_get_byte_code_and_missing_ones_are_skipped(tmp_path: Path, monkeypatch) -> None:
    package = tmp_path / "installed_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from installed_pkg import part\n")
    (package / "part.py").write_text("VALUE = 1\n")
    (package / "unused.py").write_text("VALUE = 2\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")

    compile_imported((("installed_pkg",), ("no_such_optional_package",)))

    compiled = sorted(p.name.split(".")[0] for p in (package / "__pycache__").glob("*.pyc"))
    assert compiled == ["__init__", "part"]  # what the import reached, not every file


def test_a_group_whose_process_fails_is_reported(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "broken_pkg.py").write_text("import sys\nsys.exit(3)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))

    with pytest.raises(SystemExit, match="broken_pkg"):
        compile_imported((("broken_pkg",),))

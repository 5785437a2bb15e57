"""The record of a checkout's window loop jar (read by the Airflow DAG, which cannot compute the digest)."""

from __future__ import annotations

from pathlib import Path

from lakehouse.window_jar import POINTER, SOURCE_DIR, record_jar


def test_the_pointer_lives_in_the_checkouts_own_local_folder() -> None:
    # not in the jar cache: every checkout on the machine shares that
    assert POINTER == SOURCE_DIR.parent.parent / ".local" / "window-loop-jar"


def test_record_jar_replaces_the_recorded_path_and_leaves_no_partial_file(tmp_path: Path) -> None:
    pointer = tmp_path / ".local" / "window-loop-jar"
    older, newer = tmp_path / "lakehouse-windows-aaaa.jar", tmp_path / "lakehouse-windows-bbbb.jar"
    record_jar(older, pointer)
    assert pointer.read_text().strip() == str(older)
    record_jar(newer, pointer)
    assert pointer.read_text().strip() == str(newer)
    assert [p.name for p in pointer.parent.iterdir()] == ["window-loop-jar"]


def test_no_jar_removes_the_record(tmp_path: Path) -> None:
    # a checkout whose build failed must not point at a jar of other sources
    pointer = tmp_path / "window-loop-jar"
    record_jar(tmp_path / "lakehouse-windows-aaaa.jar", pointer)
    record_jar(None, pointer)
    assert not pointer.exists()
    record_jar(None, pointer)  # nothing to remove: no error
    assert not pointer.exists()

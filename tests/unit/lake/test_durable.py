"""write_atomic: whole file or nothing, no temp file left, exclusive creation."""

import os

import pytest

from stream_edge.lake.durable import write_atomic


def test_replaces_the_whole_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "record.json"
    write_atomic(target, b"first")
    write_atomic(target, b"second, longer")
    assert target.read_bytes() == b"second, longer"
    assert os.listdir(target.parent) == ["record.json"]


def test_exclusive_refuses_an_existing_target_and_keeps_it(tmp_path):
    target = tmp_path / "batch-000001.json"
    write_atomic(target, b"mine", exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(target, b"theirs", exclusive=True)
    assert target.read_bytes() == b"mine"
    assert os.listdir(tmp_path) == ["batch-000001.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    target = tmp_path / "t.json"
    write_atomic(target, b"old")
    with pytest.raises(TypeError):
        write_atomic(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["t.json"]

"""The table sinks' Arrow memory pool (``stream_edge.sinks.arrow_memory``): the system allocator by
default, pyarrow's own choice when ``ARROW_DEFAULT_MEMORY_POOL`` is set."""

from __future__ import annotations

import pyarrow as pa
import pytest

from stream_edge.sinks.arrow_memory import POOL_ENV, use_edge_memory_pool
from stream_edge.sinks.core.datalake import DataLakeSink


@pytest.fixture
def pyarrow_default_pool(monkeypatch):
    """pyarrow's default pool as the wheel ships it (mimalloc), put back after the test."""
    before = pa.default_memory_pool()
    monkeypatch.delenv(POOL_ENV, raising=False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    yield
    pa.set_memory_pool(before)


def test_a_data_lake_sink_switches_arrow_to_the_system_allocator_when_it_starts(pyarrow_default_pool, tmp_path):
    sink = DataLakeSink("t", storage_url=tmp_path.as_uri())
    assert pa.default_memory_pool().backend_name == "mimalloc"  # constructing it changes nothing
    sink.setup()
    try:
        assert pa.default_memory_pool().backend_name == "system"
        system, mimalloc = pa.system_memory_pool(), pa.mimalloc_memory_pool()
        before = (system.bytes_allocated(), mimalloc.bytes_allocated())
        for offset in range(1000):
            sink.add({"id": offset, "name": f"n{offset}"}, None, 0, [], "t", 0, offset)
        sink._buffers[("t", 0)].seal(sink._types.types)  # the records as Arrow: from the system pool
        assert system.bytes_allocated() >= before[0] + 8 * 1000
        assert mimalloc.bytes_allocated() == before[1]
        sink.flush("t", 0)
        assert sink.stats()["rows_written"] == 1000
    finally:
        sink.cleanup()


def test_a_pool_chosen_with_the_environment_variable_is_kept(pyarrow_default_pool, monkeypatch):
    monkeypatch.setenv(POOL_ENV, "mimalloc")
    assert use_edge_memory_pool() == "mimalloc"
    assert pa.default_memory_pool().backend_name == "mimalloc"


def test_buffers_allocated_before_the_switch_are_freed_into_their_own_pool(pyarrow_default_pool):
    mimalloc = pa.mimalloc_memory_pool()
    held = pa.array(range(100_000), type=pa.int64())
    assert mimalloc.bytes_allocated() >= 800_000
    assert use_edge_memory_pool() == "system"
    del held
    assert mimalloc.bytes_allocated() < 800_000

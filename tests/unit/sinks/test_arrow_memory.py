"""The edge's Arrow memory pool (``stream_edge.sinks.arrow_memory``): the system allocator by
default, pyarrow's own choice when ``ARROW_DEFAULT_MEMORY_POOL`` is set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from stream_edge.sinks import arrow_memory
from stream_edge.sinks.arrow_memory import POOL_ENV, use_edge_memory_pool
from stream_edge.sinks.core.datalake import DataLakeSink

ROOT = Path(__file__).resolve().parents[3]


def fresh_process(code: str, **env: str) -> dict:
    """Run ``code`` in a new interpreter (pyarrow's C++ pool is chosen at its import) and return
    the JSON it prints."""
    environ = {k: v for k, v in os.environ.items() if k != POOL_ENV}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


REPORT = ("import json, os, pyarrow as pa, pyarrow.parquet as pq, io; "
          "pq.write_table(pa.table({'a': list(range(1000))}), io.BytesIO()); "
          f"print(json.dumps({{'env': os.environ.get('{POOL_ENV}'), 'pool': pa.default_memory_pool().backend_name}}))")


def test_importing_the_sinks_before_pyarrow_makes_the_system_allocator_arrows_default():
    seen = fresh_process("from stream_edge.sinks.core.datalake import DataLakeSink; " + REPORT)
    assert seen == {"env": "system", "pool": "system"}


def test_a_pool_chosen_in_the_environment_is_kept():
    seen = fresh_process("from stream_edge.sinks.core.datalake import DataLakeSink; " + REPORT,
                         **{POOL_ENV: "mimalloc"})
    assert seen == {"env": "mimalloc", "pool": "mimalloc"}


def test_pyarrow_imported_first_keeps_its_pool_until_a_sink_starts():
    seen = fresh_process("import pyarrow; from stream_edge.sinks.core.datalake import DataLakeSink; " + REPORT)
    assert seen == {"env": None, "pool": "mimalloc"}


@pytest.fixture
def pyarrow_imported_first(monkeypatch):
    """This test process's case: pyarrow imported before the sinks, the variable unset; pyarrow's
    default pool put back after the test."""
    before = pa.default_memory_pool()
    monkeypatch.delenv(POOL_ENV, raising=False)
    monkeypatch.setitem(arrow_memory._state, "set_by_edge", False)
    pa.set_memory_pool(pa.mimalloc_memory_pool())
    yield
    pa.set_memory_pool(before)


def test_a_sink_started_after_pyarrow_converts_records_with_the_system_allocator(pyarrow_imported_first, tmp_path):
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


def test_a_sink_leaves_a_pool_the_user_chose(pyarrow_imported_first, monkeypatch):
    monkeypatch.setenv(POOL_ENV, "mimalloc")
    assert use_edge_memory_pool() == "mimalloc"
    assert pa.default_memory_pool().backend_name == "mimalloc"


def test_buffers_allocated_before_the_switch_are_freed_into_their_own_pool(pyarrow_imported_first):
    mimalloc = pa.mimalloc_memory_pool()
    held = pa.array(range(100_000), type=pa.int64())
    assert mimalloc.bytes_allocated() >= 800_000
    assert use_edge_memory_pool() == "system"
    del held
    assert mimalloc.bytes_allocated() < 800_000

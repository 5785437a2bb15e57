"""The shared sink buffer (``stream_edge.sinks.arrow_buffer``): typed sealing, honest byte counts,
early writes that never drop a partition's records."""

from __future__ import annotations

import sys

import pyarrow as pa
import pytest

from stream_edge.sinks.arrow_buffer import (CHUNK_ROWS, SAMPLE_EVERY, BufferPool, PartitionBuffer, estimated_size,
                                            typed_table)
from stream_edge.sinks.record_types import ColumnTypes

RECORDS = [
    [{"id": 1, "sensor": "a", "temp": 17.5}, {"id": 2, "sensor": "b", "temp": 18.0}],
    [{"id": 1}, {"id": 2, "late": "x"}, {"late": "y", "id": 3}],  # a field appearing later, other key order
    [{"a": 1}, {"a": 2.5}],  # ints and floats: double
    [{"a": {"x": 1}}, {"a": {"y": [1, 2]}}],  # nested structs and lists
    [{"a": 1, "b": None}, {"b": True}],
    [{}, {"a": 1}],
]


def checked_types(records):
    types = ColumnTypes()
    for offset, record in enumerate(records):
        types.check(record, "t", 0, offset)
    return types.types


@pytest.mark.parametrize("records", RECORDS)
def test_typed_table_holds_the_records_with_the_checked_types(records):
    types = checked_types(records)
    table = typed_table(records, types)
    assert table.to_pylist() == pa.Table.from_struct_array(pa.array(records)).to_pylist()
    assert {f.name: f.type for f in table.schema} == {n: t for n, t in types.items() if n in table.column_names}



def test_typed_table_keeps_first_appearance_order_and_nulls_for_missing_fields():
    records = [{"b": 1, "a": "x"}, {"a": "y", "c": 2.5}, {"c": None}]
    table = typed_table(records, {"a": pa.string(), "b": pa.int64(), "c": pa.float64()})
    assert table.column_names == ["b", "a", "c"]
    assert table.to_pylist() == [{"b": 1, "a": "x", "c": None}, {"b": None, "a": "y", "c": 2.5},
                                 {"b": None, "a": None, "c": None}]


def test_typed_table_infers_a_column_the_types_do_not_know_yet():
    # The one-pass struct conversion types an unknown column as nulls; values there make it fall
    # back to the column-by-column conversion, which infers the type: no record is dropped.
    records = [{"id": 1, "extra": "x"}, {"id": 2, "extra": None}]
    table = typed_table(records, {"id": pa.int64()})
    assert table.schema.field("extra").type == pa.string()
    assert table.to_pylist() == records


def test_typed_table_raises_on_a_value_its_column_type_cannot_hold():
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError)):
        typed_table([{"id": 1}, {"id": "not a number"}], {"id": pa.int64()})

def test_estimated_size_counts_what_a_record_holds():
    small = {"id": 1}
    big = {"id": 1, "payload": "x" * 100_000, "tags": ["a" * 1000] * 10}
    assert estimated_size(small) >= sys.getsizeof(small)
    assert estimated_size(big) > 100_000 + 10 * 1000  # the strings, nested ones too
    assert estimated_size(big) < 3 * (100_000 + 10 * 1000)


def fill(buffer: PartitionBuffer, records, types, start=0):
    for offset, record in enumerate(records, start):
        buffer.values.append(record)
        buffer.offsets.append(offset)
        buffer.last = offset
        if len(buffer.offsets) >= buffer.next_sample and buffer.sample():
            buffer.seal(types)


def test_large_records_are_counted_by_their_size_and_sealed_early():
    buffer = PartitionBuffer(keep_keys=False)
    record = {"id": 1, "payload": "x" * 50_000}
    fill(buffer, [dict(record, id=i) for i in range(SAMPLE_EVERY)], {"id": pa.int64(), "payload": pa.string()})
    # 64 records of ~50 kB each: far past the old flat 512 B per dict; sealed before CHUNK_ROWS
    assert buffer.chunks and buffer.chunk_bytes >= SAMPLE_EVERY * 50_000
    assert buffer.held >= SAMPLE_EVERY * 50_000


def test_small_records_stay_dicts_until_a_chunk_and_are_counted_meanwhile():
    buffer = PartitionBuffer(keep_keys=False)
    records = [{"id": i, "sensor": f"s-{i}"} for i in range(CHUNK_ROWS - 1)]
    fill(buffer, records, {"id": pa.int64(), "sensor": pa.string()})
    assert not buffer.chunks and len(buffer.values) == CHUNK_ROWS - 1
    assert buffer.held >= (CHUNK_ROWS - 1) * sys.getsizeof(records[0])  # honest: at least the dicts themselves
    fill(buffer, [{"id": CHUNK_ROWS - 1, "sensor": "s"}], {"id": pa.int64(), "sensor": pa.string()},
         start=CHUNK_ROWS - 1)
    assert len(buffer.chunks) == 1 and buffer.values == []


def test_a_chunk_sealed_before_a_column_widened_is_cast():
    buffer = PartitionBuffer(keep_keys=False)
    fill(buffer, [{"v": 1}], {"v": pa.int64()})
    buffer.seal({"v": pa.int64()})
    fill(buffer, [{"v": 2.5}], {"v": pa.float64()}, start=1)
    assert buffer.table(0, {"v": pa.float64()}).to_pylist() == [{"v": 1.0}, {"v": 2.5}]
    assert buffer.table(1, {"v": pa.float64()}).to_pylist() == [{"v": 2.5}]


def test_a_failing_early_write_puts_the_buffer_back_and_blocks_until_the_checkpoint():
    pool = BufferPool(max_bytes=1, keep_keys=False)
    for partition in (0, 1):
        buffer = pool.for_offset(("t", partition), 0)
        fill(buffer, [{"v": i} for i in range(5)], {"v": pa.int64()})
    seen = []

    def write(topic, partition, buffer):
        seen.append(partition)
        if partition == 1:
            raise ValueError("boom")

    assert pool.over_bound()
    assert pool.write_early(write, "test") == 1
    assert seen == [0, 1] and pool.blocked and not pool.over_bound()
    assert len(pool.get(("t", 0))) == 0 and pool.get(("t", 0)).last == 4  # written: a fresh buffer
    assert list(pool.get(("t", 1)).offsets) == [0, 1, 2, 3, 4]  # failed: every record kept
    pool.unblock()
    assert pool.over_bound()


def test_a_rewind_keeps_one_copy_across_chunks():
    pool = BufferPool(max_bytes=None, keep_keys=True)
    buffer = pool.for_offset(("t", 0), 0)
    types = {"v": pa.int64()}
    fill(buffer, [{"v": i} for i in range(10)], types)
    buffer.seal(types)
    fill(buffer, [{"v": i} for i in range(10, 15)], types, start=10)
    again = pool.for_offset(("t", 0), 7)
    assert again is buffer and list(buffer.offsets) == list(range(7))
    assert [r["v"] for r in buffer.table(0, types).to_pylist()] == list(range(7))

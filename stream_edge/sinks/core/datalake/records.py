"""A batch's Arrow table -> the lake's files: hive partitions, Kafka metadata, tombstones.

- Types are not decided here: the sink checks every record in ``add()`` and ``write()`` (one
  checker, ``stream_edge.sinks.record_types``: a record that disagrees is that record's
  :class:`SchemaConflictError`, never a silent coercion) and its buffers hand the builder the
  records as an Arrow table typed accordingly. A column of nulls only (no type yet) is left out:
  it appears once it has a value.
- Columns keep the records' order of first appearance; a column that first appears later shows
  up in later files.
- Hive columns ``year/month/day/hour`` are derived from the timestamp column (epoch ms, UTC) and
  written into the files as int32 columns as well as the paths (catalogs such as pyiceberg read
  partition values from the file); value hive columns stay in the file as they are.
- Tombstones (a record whose value is None) are rows when the Kafka metadata is landed: every
  value column NULL, the ``_kafka_*`` columns set and ``_kafka_tombstone`` true (false on every
  other row), in the time partition of their Kafka timestamp (they hold no timestamp field). Not
  ``_deleted``: Iceberg reserves that name for its row-deletion metadata column, and Spark refuses
  to scan a table that has a column of that name. The sink marks
  them by offset (:meth:`TableBuilder.mark_tombstone`), so a tombstone stays one even after its
  buffer was converted to Arrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

import pyarrow as pa
import pyarrow.compute as pc

from stream_edge.lake.partitioning import TIME_PARTITION_COLUMNS, partition_path, partition_value_string
from stream_edge.sinks.record_types import SchemaConflictError, preview

__all__ = ("SchemaConflictError", "RecordTypeError", "PartitionedTable", "TableBuilder")

_TIME_FORMATS = {"year": "{:04d}", "month": "{:02d}", "day": "{:02d}", "hour": "{:02d}"}
METADATA_COLUMNS = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key",
                    "_kafka_tombstone")


class RecordTypeError(TypeError):
    """A record value is not a dict (the lake sink writes dicts, and tombstones when it lands the
    Kafka metadata)."""

    def __init__(self, value: Any, topic: str, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset
        if value is None:
            message = (f"DataLakeSink got a tombstone (value None) at {topic}[{partition}] offset {offset}; "
                       "it lands tombstones only with include_kafka_metadata=True (a row with "
                       "_kafka_tombstone = true), "
                       "else filter them out before sinking")
        else:
            message = (f"DataLakeSink needs dict records; got {type(value).__name__} at {topic}[{partition}] "
                       f"offset {offset}: {preview(value)} (convert values to dicts before sinking)")
        super().__init__(message)


_HOUR_MS = 3_600_000


def _single_hour_parts(ts: pa.Array) -> Optional[Dict[str, int]]:
    """year/month/day/hour shared by every row of integer epoch-ms ``ts``, or None.

    UTC hours are whole multiples of an hour since the epoch, so equal ``min // hour`` and
    ``max // hour`` mean one hour for the whole batch: the partition values are computed once
    instead of four kernels over every row.
    """
    if not pa.types.is_integer(ts.type) or ts.null_count or len(ts) == 0:
        return None
    bounds = pc.min_max(ts)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if lo // _HOUR_MS != hi // _HOUR_MS:
        return None
    try:
        moment = datetime.fromtimestamp(lo / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None  # outside Python's datetime range: let Arrow's kernels handle it
    return {"year": moment.year, "month": moment.month, "day": moment.day, "hour": moment.hour}


def _constant_value(array: pa.Array) -> Tuple[bool, Any]:
    """``(True, value)`` when every row of a hive key column holds the same value.

    Only for types whose equal min and max imply one partition path: integers, strings and
    booleans (floats are left to grouping: 0.0 and -0.0 compare equal but print differently).
    """
    nulls = array.null_count
    if nulls == len(array):
        return True, None
    kind = array.type
    if nulls or not (pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_boolean(kind)):
        return False, None
    bounds = pc.min_max(array)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    return (True, lo) if lo == hi else (False, None)


def _row_numbers(count: int) -> pa.Array:
    """0, 1, ..., count - 1 as int64, built by Arrow (a Python range would cost ~1 ms per 10k)."""
    return pc.subtract(pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), count)), 1)


@dataclass
class PartitionedTable:
    """One file's worth of rows: its hive path, the partition values and the Arrow table."""

    hive_path: str
    partition_values: Tuple[Tuple[str, Optional[str]], ...]
    table: pa.Table


class TableBuilder:
    """Turns a batch's typed Arrow table into per-hive-path tables (the lake's files).

    :param hive_columns: partition columns in path order.
    :param timestamp_column: epoch-ms field for year/month/day/hour (None: the Kafka timestamp).
    :param include_kafka_metadata: add ``_kafka_topic/_partition/_offset/_timestamp/_key`` columns.
    """

    def __init__(self, hive_columns: Sequence[str], timestamp_column: Optional[str],
                 include_kafka_metadata: bool = False) -> None:
        self.hive_columns = list(hive_columns)
        self.time_columns = [c for c in self.hive_columns if c in TIME_PARTITION_COLUMNS]
        self.timestamp_column = timestamp_column
        self.include_kafka_metadata = include_kafka_metadata
        # offsets of the tombstones not yet built, per topic partition
        self.tombstones: Dict[Tuple[str, int], Set[int]] = {}

    def mark_tombstone(self, topic: str, partition: int, offset: int) -> None:
        """The record at ``offset`` is a tombstone (buffered as an empty dict)."""
        self.tombstones.setdefault((topic, partition), set()).add(offset)

    def _tombstone_mask(self, offsets: Sequence[int], topic: str, partition: int) -> Optional[pa.Array]:
        """Which of ``offsets`` are tombstones (None: none). Offsets before the batch's first are
        forgotten: they were written, or they were dropped and come again from Kafka (and are
        marked again)."""
        marked = self.tombstones.get((topic, partition))
        if not marked:
            return None
        first = offsets[0]
        stale = [o for o in marked if o < first]
        marked.difference_update(stale)
        if not marked:
            return None
        mask = pa.array([o in marked for o in offsets], pa.bool_())
        return mask if mask.true_count else None

    # -- partitions -----------------------------------------------------------------------------
    def _time_parts(self, table: pa.Table, timestamps: Sequence[int], topic: str, partition: int,
                    tombstones: Optional[pa.Array] = None) -> Dict[str, pa.Array]:
        if self.timestamp_column is None:
            ts = pa.array(timestamps, pa.int64())
        elif self.timestamp_column in table.column_names:
            ts = table.column(self.timestamp_column).combine_chunks()
        else:
            ts = pa.nulls(table.num_rows, pa.int64())
        if pa.types.is_timestamp(ts.type):
            moments = ts if ts.type.tz is None else ts.cast(pa.timestamp(ts.type.unit))
        elif pa.types.is_integer(ts.type) or pa.types.is_floating(ts.type) or pa.types.is_null(ts.type):
            millis = pc.floor(ts) if pa.types.is_floating(ts.type) else ts
            moments = millis.cast(pa.int64()).cast(pa.timestamp("ms"))
        else:
            raise SchemaConflictError(
                str(self.timestamp_column), topic, partition, None,
                f"timestamp column must hold epoch milliseconds (int/float) or timestamps, got {ts.type}")
        if tombstones is not None and self.timestamp_column is not None:
            # a tombstone holds no timestamp field: it goes to the hour of its Kafka timestamp
            kafka = pa.array(timestamps, pa.int64()).cast(pa.timestamp("ms")).cast(moments.type)
            moments = pc.if_else(tombstones, kafka, moments)
            ts = moments
        constant = _single_hour_parts(ts)
        if constant is not None:
            return {c: pa.repeat(pa.scalar(constant[c], pa.int32()), len(ts)) for c in self.time_columns}
        extract = {"year": pc.year, "month": pc.month, "day": pc.day, "hour": pc.hour}
        return {c: extract[c](moments).cast(pa.int32()) for c in self.time_columns}

    def build(self, values: pa.Table, offsets: Sequence[int], timestamps: Sequence[int], keys: Sequence[Any],
              topic: str, partition: int) -> List[PartitionedTable]:
        """Build the per-hive-path tables of one batch: ``values`` holds the records' columns,
        typed by the sink's checks (no record has a field named like a derived hive column)."""
        typed = [i for i, field in enumerate(values.schema) if not pa.types.is_null(field.type)]
        table = values if len(typed) == values.num_columns else values.select(typed)
        tombstones = self._tombstone_mask(offsets, topic, partition) if self.include_kafka_metadata else None
        derived = self._time_parts(table, timestamps, topic, partition, tombstones) if self.time_columns else {}
        for name, array in derived.items():
            table = table.append_column(name, array)
        if self.include_kafka_metadata:
            table = self._with_metadata(table, offsets, timestamps, keys, topic, partition, tombstones)
        return self._split(table, topic, partition, offsets)

    @staticmethod
    def _with_metadata(table, offsets, timestamps, keys, topic, partition, tombstones=None):
        n = table.num_rows
        raw_keys = [k if k is None or isinstance(k, bytes) else
                    (k.encode() if isinstance(k, str) else str(k).encode()) for k in keys]
        extra = {
            "_kafka_topic": pa.array([topic] * n, pa.string()),
            "_kafka_partition": pa.array([partition] * n, pa.int32()),
            "_kafka_offset": pa.array(offsets, pa.int64()),
            "_kafka_timestamp": pa.array(timestamps, pa.int64()),
            "_kafka_key": pa.array(raw_keys, pa.binary()),
            "_kafka_tombstone": tombstones if tombstones is not None else pa.repeat(pa.scalar(False), n),
        }
        for name, array in extra.items():
            if name in table.column_names:
                table = table.drop_columns([name])
            table = table.append_column(name, array)
        return table

    def _split(self, table: pa.Table, topic: str, partition: int, offsets) -> List[PartitionedTable]:
        if not self.hive_columns:
            return [PartitionedTable("", (), table)]
        key_arrays = []
        for column in self.hive_columns:
            if column in table.column_names:
                array = table.column(column).combine_chunks()
                if pa.types.is_nested(array.type):
                    raise SchemaConflictError(column, topic, partition, offsets[0],
                                              f"hive column must hold scalar values, got {array.type}")
                key_arrays.append(array)
            else:
                key_arrays.append(pa.nulls(table.num_rows, pa.string()))
        keys = pa.table(key_arrays, names=[f"k{i}" for i in range(len(key_arrays))])
        constants = [_constant_value(array) for array in key_arrays]
        if all(found for found, _ in constants):
            # The usual case (one hour, one device...): no grouping, no row shuffling.
            row = {name: value for name, (_, value) in zip(keys.column_names, constants)}
            return [self._partitioned(row, keys.column_names, table)]
        indexed = keys.append_column("__row", _row_numbers(table.num_rows))
        groups = indexed.group_by(keys.column_names, use_threads=False).aggregate([("__row", "list")])
        if groups.num_rows == 1:
            return [self._partitioned(groups.drop_columns(["__row_list"]).to_pylist()[0], keys.column_names, table)]
        row_lists = groups.column("__row_list")
        by_path: Dict[str, PartitionedTable] = {}
        rows_by_path: Dict[str, List[pa.Array]] = {}
        for index, row in enumerate(groups.drop_columns(["__row_list"]).to_pylist()):
            part = self._partitioned(row, keys.column_names, table)
            # Distinct values can share a path ('' and NULL both go to the default partition).
            by_path.setdefault(part.hive_path, part)
            rows_by_path.setdefault(part.hive_path, []).append(row_lists[index].values)
        result = []
        for path in sorted(by_path):
            chunks = rows_by_path[path]
            rows = chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks)
            rows = rows.take(pc.sort_indices(rows))  # keep offset order inside each file
            part = by_path[path]
            first, last = rows[0].as_py(), rows[-1].as_py()
            if last - first + 1 == len(rows):
                part.table = table.slice(first, len(rows))  # time-ordered data: a zero-copy run
            else:
                part.table = table.take(rows)
            result.append(part)
        return result

    def _partitioned(self, row: Dict[str, Any], key_names: List[str], table: pa.Table) -> PartitionedTable:
        texts = []
        for column, key_name in zip(self.hive_columns, key_names):
            value = row[key_name]
            if column in self.time_columns and value is not None:
                value = _TIME_FORMATS[column].format(value)  # zero-padded in the path
            texts.append(value)
        path = partition_path(self.hive_columns, texts)
        values = tuple((c, partition_value_string(v)) for c, v in zip(self.hive_columns, texts))
        return PartitionedTable(path, values, table)

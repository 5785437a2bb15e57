"""The one registration commit (stream_edge.lake.iceberg_registration): the edge's files in place,
the name mapping and the writer's batch property in ONE Iceberg snapshot (pyiceberg over a local
Hadoop-layout table, no Spark)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import DoubleType, LongType, NestedField

from lakehouse.iceberg_catalogs import HadoopLayoutCatalog
from stream_edge.lake.iceberg_registration import NAME_MAPPING_PROPERTY, append_files


@pytest.fixture()
def table(tmp_path):
    location = (tmp_path / "wh" / "db" / "t").as_uri()
    schema = Schema(NestedField(1, "id", LongType(), required=False), NestedField(2, "v", DoubleType(), required=False))
    metadata = new_table_metadata(schema, UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location, {})
    (tmp_path / "wh" / "db" / "t" / "metadata").mkdir(parents=True)
    ToOutputFile.table_metadata(metadata, PyArrowFileIO().new_output(f"{location}/metadata/v1.metadata.json"))
    (tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text").write_text("1")
    return HadoopLayoutCatalog("embedded", warehouse=(tmp_path / "wh").as_uri()).load_table(("db", "t"))


def edge_file(tmp_path, name, ids, ints=False):
    """An edge file: no Iceberg field ids; ``ints`` writes int32/float32 (promoted on read)."""
    path = tmp_path / "lake" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int32() if ints else pa.int64()),
                             "v": pa.array([i / 2 for i in ids], pa.float32() if ints else pa.float64())}), path)
    return path.as_uri()


def test_files_mapping_and_batch_property_land_in_one_snapshot(table, tmp_path):
    files = [edge_file(tmp_path, "a.parquet", [1, 2]), edge_file(tmp_path, "b.parquet", [3], ints=True)]
    table = append_files(table, files, properties={"lakehouse.register.last-batch": "7"},
                         snapshot_properties={"lakehouse.register.batch": "7"})
    assert len(table.snapshots()) == 1
    snapshot = table.current_snapshot()
    assert snapshot.summary["lakehouse.register.batch"] == "7" and snapshot.summary["added-data-files"] == "2"
    assert table.properties["lakehouse.register.last-batch"] == "7"
    assert NAME_MAPPING_PROPERTY in table.properties  # the files carry no field ids: read by name
    rows = table.scan().to_arrow().sort_by("id")
    assert rows.column("id").to_pylist() == [1, 2, 3] and rows.column("v").to_pylist() == [0.5, 1.0, 1.5]


def test_a_file_that_does_not_fit_commits_nothing(table, tmp_path):
    bad = tmp_path / "lake" / "bad.parquet"
    bad.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(["x"]), "v": pa.array([1.0])}), bad)
    good = edge_file(tmp_path, "good.parquet", [1])
    with pytest.raises(ValueError):
        append_files(table, [good, bad.as_uri()], properties={"lakehouse.register.last-batch": "1"},
                     snapshot_properties={})
    table = table.refresh()
    assert table.current_snapshot() is None and "lakehouse.register.last-batch" not in table.properties
    with pytest.raises(ValueError, match="at least one file"):
        append_files(table, [], properties={}, snapshot_properties={})

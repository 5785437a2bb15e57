"""pyiceberg over Iceberg's Hadoop-catalog layout (the embedded catalog): load, commit, and a lost
race refused (local files, no Spark)."""

from __future__ import annotations

import pytest
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.serializers import ToOutputFile
from pyiceberg.table.metadata import new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
from pyiceberg.types import LongType, NestedField

from lakehouse.iceberg_catalogs import HadoopLayoutCatalog
from pyiceberg.io.pyarrow import PyArrowFileIO


@pytest.fixture()
def catalog(tmp_path):
    """A warehouse holding ``db.t`` at version 1, as Iceberg's HadoopCatalog writes it."""
    location = (tmp_path / "wh" / "db" / "t").as_uri()
    metadata = new_table_metadata(Schema(NestedField(1, "id", LongType(), required=False)),
                                  UNPARTITIONED_PARTITION_SPEC, UNSORTED_SORT_ORDER, location, {})
    (tmp_path / "wh" / "db" / "t" / "metadata").mkdir(parents=True)
    ToOutputFile.table_metadata(metadata, PyArrowFileIO().new_output(f"{location}/metadata/v1.metadata.json"))
    (tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text").write_text("1")
    return HadoopLayoutCatalog("embedded", warehouse=(tmp_path / "wh").as_uri())


def test_commits_a_new_version_and_moves_the_hint(catalog, tmp_path):
    table = catalog.load_table(("db", "t"))
    with table.transaction() as tx:
        tx.set_properties({"lakehouse.register.last-batch": "3"})
    again = catalog.load_table(("db", "t"))
    assert again.properties["lakehouse.register.last-batch"] == "3"
    assert again.metadata_location.endswith("/metadata/v2.metadata.json")
    assert (tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text").read_text() == "2"
    assert catalog.table_exists(("db", "t")) and not catalog.table_exists(("db", "missing"))
    with pytest.raises(NoSuchTableError):
        catalog.load_table(("db", "missing"))


def test_a_writer_that_lost_the_race_retries_on_the_new_version(catalog):
    """The second writer's commit is refused (its base is stale) and pyiceberg retries it on the
    current version: both appends are in, none replaced the other."""
    import pyarrow as pa

    rows = pa.table({"id": pa.array([1, 2], pa.int64())})
    first, second = catalog.load_table(("db", "t")), catalog.load_table(("db", "t"))
    first.append(rows)
    second.append(rows)  # based on the table without the first append's snapshot
    table = catalog.load_table(("db", "t"))
    assert table.scan().to_arrow().num_rows == 4 and len(table.snapshots()) == 2
    assert table.metadata_location.endswith("/v3.metadata.json")


def test_a_version_file_another_writer_created_is_never_replaced(catalog):
    table = catalog.load_table(("db", "t"))
    location = table.location()
    taken = f"{location}/metadata/v2.metadata.json"
    catalog._create_exclusively(location, taken, table.metadata)
    with pytest.raises(CommitFailedException, match="another writer"):
        catalog._create_exclusively(location, taken, table.metadata)


def test_a_version_committed_before_the_hint_moved_is_found(catalog, tmp_path):
    table = catalog.load_table(("db", "t"))
    with table.transaction() as tx:
        tx.set_properties({"k": "v"})
    (tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text").write_text("1")  # a crash before the hint
    assert catalog.load_table(("db", "t")).properties["k"] == "v"

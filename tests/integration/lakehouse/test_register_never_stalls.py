"""Registration never stalls: a file the table cannot take is set aside (reported, counted, exit
code 1) while the others register, on this run and every later one; Iceberg's type promotions
(int -> bigint, float -> double) are applied (the embedded catalog through pyiceberg, real Spark)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakehouse.register import RegisterOptions, run_register

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def put(root, relative, **columns):
    """A committed edge file (visible Parquet under its partition directory) with these columns."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def test_a_file_the_table_cannot_take_is_set_aside_and_the_rest_registers(spark, tmp_path, make_target):
    target = make_target("embedded")
    root = tmp_path / "lake" / "readings"
    put(root, "sensor=a/f1.parquet", v=pa.array([1, 2], pa.int32()), x=pa.array([0.5, 1.5], pa.float32()),
        sensor=pa.array(["a", "a"]))

    def register():
        return run_register(spark, RegisterOptions(source=root.as_uri(), table=target.name))

    first = register()
    assert first.extra["files added"] == 1 and first.problem is None
    table = f"{target.sql_name()}"
    assert {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}["v"] == "int"

    put(root, "sensor=a/f2.parquet", v=pa.array([2**40], pa.int64()), x=pa.array([2.25], pa.float64()),
        sensor=pa.array(["a"]))  # wider: the table's columns are widened (Iceberg's promotions)
    put(root, "sensor=b/f3.parquet", v=pa.array(["not a number"]), x=pa.array([1.0], pa.float64()),
        sensor=pa.array(["b"]))  # incompatible: set aside
    put(root, "sensor=b/f4.parquet", v=pa.array([7], pa.int32()), x=pa.array([3.5], pa.float32()),
        sensor=pa.array(["b"]))  # narrower than the widened table: read as bigint/double
    second = register()
    assert second.extra["files added"] == 2 and second.extra["files set aside"] == 1
    assert "sensor=b/f3.parquet" in second.problem and "'v'" in second.problem
    spark.sql(f"REFRESH TABLE {table}")
    types = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    assert (types["v"], types["x"]) == ("bigint", "double")
    rows = sorted((r.v, r.x, r.sensor) for r in spark.table(table).collect())
    assert rows == [(1, 0.5, "a"), (2, 1.5, "a"), (7, 3.5, "b"), (2**40, 2.25, "a")]

    put(root, "sensor=a/f5.parquet", v=pa.array([9], pa.int64()), x=pa.array([9.0], pa.float64()),
        sensor=pa.array(["a"]))
    third = register()  # the refused file is refused again, and holds up nothing
    assert third.extra["files added"] == 1 and third.extra["files set aside"] == 1
    spark.sql(f"REFRESH TABLE {table}")
    assert spark.table(table).count() == 5


def test_the_cli_exits_1_naming_the_set_aside_file(spark, tmp_path, make_target, monkeypatch, capsys):
    from pipelines.cli import main

    target = make_target("embedded")
    for key, value in target.env.items():  # in-process main() reuses the session
        monkeypatch.setenv(key, value)
    root = tmp_path / "lake" / "readings"
    put(root, "sensor=a/good.parquet", v=pa.array([1], pa.int64()), sensor=pa.array(["a"]))
    assert main(["register", "--source", root.as_uri(), "--table", target.name, "--embedded-catalog"]) == 0
    put(root, "sensor=a/zz-bad.parquet", v=pa.array([b"\x00"], pa.binary()), sensor=pa.array(["a"]))
    put(root, "sensor=b/more.parquet", v=pa.array([2], pa.int64()), sensor=pa.array(["b"]))
    assert main(["register", "--source", root.as_uri(), "--table", target.name, "--embedded-catalog"]) == 1
    err = capsys.readouterr().err
    assert "files added 1" in err and "files set aside 1" in err and "zz-bad.parquet" in err
    spark.sql(f"REFRESH TABLE {target.sql_name()}")
    assert spark.table(target.sql_name()).count() == 2

"""The lake as Spark reads it: hostile partition values come back exactly, NULL as NULL."""

from __future__ import annotations

import pytest

from stream_edge.sinks.core.datalake import DataLakeSink

pytestmark = [pytest.mark.integration, pytest.mark.spark]

TS = 1_745_311_234_567  # 2025-04-22 08 UTC

HOSTILE = ["../x", "a/b", "=", "%", "%2F", "a=b/c=d", "ünïcødé ✓ 温度", "..", ".", "tab\tnew\nline",
           'q"\'*:?\\{[]^#', "__x", " lead space", "plain", None]


def write_lake(tmp_path, hive_columns, values):
    sink = DataLakeSink("hostile", storage_url=(tmp_path / "lake").as_uri(), hive_columns=hive_columns,
                        timestamp_column="ts_ms")
    sink.setup()
    for offset, value in enumerate(values):
        sink.add(value, None, TS, [], "sensors", 0, offset)
    sink.flush("sensors", 0)
    return tmp_path / "lake" / "hostile"


def test_hostile_values_round_trip_through_spark_partition_discovery(spark, tmp_path):
    records = [{"sensor": s, "ts_ms": TS, "i": i} for i, s in enumerate(HOSTILE + [""])]
    root = write_lake(tmp_path, ["sensor", "hour"], records)
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    try:
        df = spark.read.parquet(root.as_uri())
        rows = {r["i"]: r for r in df.select("i", "sensor", "hour").collect()}
    finally:
        spark.conf.unset("spark.sql.sources.partitionColumnTypeInference.enabled")
    assert len(rows) == len(records)  # nothing lost, nothing outside the root
    for record in records:
        expected = record["sensor"] if record["sensor"] != "" else None  # Hive/Spark: '' is NULL
        assert rows[record["i"]]["sensor"] == expected, repr(record["sensor"])
        assert rows[record["i"]]["hour"] == "08"
    assert set(p.name.split("=", 1)[0] for p in root.iterdir() if not p.name.startswith("_")) == {"sensor"}


def test_time_partitions_and_values_with_type_inference(spark, tmp_path):
    day1, day2 = 1_704_067_199_000, 1_704_067_200_000
    records = [{"sensor": "s1", "ts_ms": day1, "v": 1.5}, {"sensor": "s2", "ts_ms": day2, "v": 2.5},
               {"sensor": None, "ts_ms": day2, "v": 3.5}]
    root = write_lake(tmp_path, ["year", "month", "day", "hour", "sensor"], records)
    df = spark.read.parquet(root.as_uri())
    got = sorted(((r["year"], r["month"], r["day"], r["hour"], r["sensor"], r["v"])
                  for r in df.select("year", "month", "day", "hour", "sensor", "v").collect()),
                 key=lambda row: row[-1])
    assert got == [(2023, 12, 31, 23, "s1", 1.5), (2024, 1, 1, 0, "s2", 2.5), (2024, 1, 1, 0, None, 3.5)]


def test_spark_ignores_staging_and_commit_log(spark, tmp_path):
    root = write_lake(tmp_path, ["sensor"], [{"sensor": "a", "ts_ms": TS, "v": 1}])
    (root / "_tmp" / "sensors" / "0").mkdir(parents=True, exist_ok=True)  # the writer keeps its staging folder
    (root / "_tmp" / "sensors" / "0" / "garbage.parquet").write_bytes(b"not parquet")
    assert [r["v"] for r in spark.read.parquet(root.as_uri()).collect()] == [1]

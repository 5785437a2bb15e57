"""compact: many small edge commits -> few files per partition, same rows; only partitions that
need it; Iceberg cleanup deletes the replaced edge files and register never re-adds them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from chispa import assert_df_equality
from lh_testkit import TABLE_KINDS, sensor_records

from lakehouse.compaction import CompactOptions, run_compact
from lakehouse.register import RegisterOptions, run_register

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def snapshot(spark, target):
    if target.kind != "delta":
        spark.sql(f"REFRESH TABLE {target.sql_name()}")
    return spark.table(target.sql_name()).select("seq", "ts_ms", "sensor", "value").localCheckpoint()


def register(spark, lake, target):
    return run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                               table_format=target.table_format))


def compact(spark, target, **kwargs):
    kwargs.setdefault("retention", timedelta(0))
    kwargs.setdefault("orphan_retention", timedelta(0))
    kwargs.setdefault("allow_unsafe_retention", True)
    return run_compact(spark, CompactOptions(table=target.name, table_format=target.table_format, **kwargs))


@pytest.mark.parametrize("kind", TABLE_KINDS)
def test_compact_bin_packs_small_files_and_keeps_every_row(spark, edge_lake, make_target, kind):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    # 5 checkpoints x 2 hours = 10 small files, 5 per partition, each registered when it lands
    # (Delta copies each registration batch: its small files come from frequent registers).
    for commit in range(5):
        lake.write(sensor_records(30, commit * 100, hours=2))
        register(spark, lake, target)
    lake.write([dict(r, ts_ms=r["ts_ms"] + 24 * 3_600_000) for r in sensor_records(7, 9000, hours=1)])
    register(spark, lake, target)
    before = snapshot(spark, target)
    survivor = lake.data_files()[0]
    survivor_bytes = survivor.read_bytes()

    report = compact(spark, target)
    assert report.files_before == 11
    assert report.files_after == 3  # one per compacted hour + the untouched single-file day
    assert report.extra["partitions compacted"] == 2
    assert report.rows_before == report.rows_after == 157
    assert_df_equality(snapshot(spark, target), before, ignore_row_order=True, ignore_nullable=True)

    again = compact(spark, target)  # nothing left to do
    assert again.extra["partitions compacted"] == 0 and again.files_after == 3

    if target.table_format == "iceberg":
        # Expiring the old snapshots deleted the replaced edge files (the table owns them)...
        assert len(lake.data_files()) == 1
    # A replaced edge file that is still (or again) in the lake is never registered twice.
    survivor.write_bytes(survivor_bytes)
    lake.write(sensor_records(4, 5000, hours=1))
    assert register(spark, lake, target).extra["files added"] == 1
    assert snapshot(spark, target).count() == 161


def test_compact_since_touches_only_recent_partitions(spark, edge_lake, make_target):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target("embedded")
    for commit in range(3):
        lake.write(sensor_records(12, commit * 100, hours=3))
        register(spark, lake, target)

    from datetime import datetime, timezone

    from lh_testkit import BASE_TS, HOUR_MS
    since = datetime.fromtimestamp((BASE_TS + 2 * HOUR_MS) / 1000, tz=timezone.utc)
    report = compact(spark, target, since=since)
    assert report.extra["partitions compacted"] == 1
    assert (report.files_before, report.files_after) == (9, 7)


def test_compact_delta_with_zorder_and_small_target(spark, edge_lake, make_target):
    lake = edge_lake(hive_columns=("year", "month", "day"))
    target = make_target("delta")
    for commit in range(4):
        lake.write(sensor_records(50, commit * 100, hours=4))
        register(spark, lake, target)
    before = snapshot(spark, target)

    report = compact(spark, target, zorder=["sensor", "ts_ms"], target_file_size=1 << 20)
    assert (report.files_before, report.files_after) == (4, 1)
    assert_df_equality(snapshot(spark, target), before, ignore_row_order=True, ignore_nullable=True)


def test_compact_refuses_unsafe_retention_without_the_flag(spark, edge_lake, make_target):
    lake = edge_lake()
    lake.write(sensor_records(4, 0))
    target = make_target("delta")
    register(spark, lake, target)
    with pytest.raises(ValueError, match="below the safe minimum"):
        run_compact(spark, CompactOptions(table=target.name, table_format="delta", retention=timedelta(hours=1)))


@pytest.mark.parametrize("kind", ["rest", "delta"])
def test_maintenance_actions_one_at_a_time(spark, edge_lake, make_target, kind):
    """The maintenance DAG's steps: compact without clean-up, then Iceberg rewrite_manifests,
    expire_snapshots, remove_orphan_files, or Delta vacuum; the rows never change."""
    from lakehouse.maintenance import MaintainOptions, run_maintain

    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    for commit in range(3):
        lake.write(sensor_records(20, commit * 100, hours=2))
        register(spark, lake, target)
    before = snapshot(spark, target)
    compact(spark, target, cleanup=False)

    def maintain(action):
        return run_maintain(spark, MaintainOptions(table=target.name, table_format=target.table_format, action=action,
                                                   retention=timedelta(0), orphan_retention=timedelta(0),
                                                   allow_unsafe_retention=True))

    if kind == "delta":
        with pytest.raises(ValueError, match="not a delta action"):
            maintain("rewrite-manifests")
        report = maintain("vacuum")
    else:
        manifests = spark.sql(f"SELECT count(*) FROM {target.name}.manifests").collect()[0][0]
        report = maintain("rewrite-manifests")
        assert report.extra["manifests rewritten"] == manifests > 1
        assert spark.sql(f"SELECT count(*) FROM {target.name}.manifests").collect()[0][0] < manifests
        assert maintain("expire-snapshots").extra["data files deleted"] == 6  # the compacted edge files
        assert spark.sql(f"SELECT count(*) FROM {target.name}.snapshots").collect()[0][0] == 1
        report = maintain("remove-orphan-files")
    assert report.rows_before == report.rows_after == 60
    assert_df_equality(snapshot(spark, target), before, ignore_row_order=True, ignore_nullable=True)

"""Orphan files past the 24-hour check (``--allow-unsafe-retention``): listed and deleted through
pyiceberg; every file a snapshot references stays, a recent stray file stays, an old one goes."""

from __future__ import annotations

import os
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlparse

import pytest
from lh_testkit import sensor_records

from lakehouse.compaction import CompactOptions, remove_orphan_files, run_compact
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.register import RegisterOptions, run_register

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.mark.parametrize("kind", ["rest", "embedded"])
def test_old_unreferenced_files_go_and_everything_referenced_stays(spark, edge_lake, make_target, kind):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    for commit in range(3):
        lake.write(sensor_records(20, commit * 100, hours=2))
        run_register(spark, RegisterOptions(source=lake.uri, table=target.name))
    # the replaced files stay referenced by the older snapshots (not expired here)
    run_compact(spark, CompactOptions(table=target.name, cleanup=False))
    table = IcebergTable(spark, target.name)
    data = Path(urlparse(table.py_table().location()).path) / "data"
    data.mkdir(parents=True, exist_ok=True)
    old, fresh = data / "killed-writer-old.parquet", data / "killed-writer-new.parquet"
    for stray in (old, fresh):
        stray.write_bytes(b"PAR1 half-written PAR1")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    rows_before = sorted(spark.table(target.sql_name()).collect())

    assert remove_orphan_files(table, timedelta(minutes=10)) == 1
    assert not old.exists() and fresh.exists()
    spark.sql(f"REFRESH TABLE {target.sql_name()}")
    assert sorted(spark.table(target.sql_name()).collect()) == rows_before
    first = spark.sql(f"SELECT snapshot_id FROM {target.sql_name()}.snapshots ORDER BY committed_at LIMIT 1").collect()[0][0]
    assert spark.sql(f"SELECT count(*) FROM {target.sql_name()} VERSION AS OF {first}").collect()[0][0] == 20

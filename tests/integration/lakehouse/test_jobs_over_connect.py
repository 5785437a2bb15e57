"""Every job over Spark Connect: the chain register -> windows -> validate -> publish -> sql runs
unchanged against the local Spark Connect server (``./dev services up spark-connect``), each job
a process of its own with only ``SPARK_REMOTE`` set, the Iceberg REST catalog and real files."""

from __future__ import annotations

import csv
import json
import uuid

import pytest
from lh_testkit import run_job, sensor_records

from stream_edge.dataframe.windows.replay import replay

pytestmark = [pytest.mark.integration]


def test_the_job_chain_runs_over_spark_connect(ensure_services, services_env, edge_lake, tmp_path):
    remote = ensure_services("spark-connect")["SPARK_CONNECT_URL"]
    lake = edge_lake()
    records = sensor_records(24, 0)
    lake.write(records)
    namespace = f"connect_{uuid.uuid4().hex[:8]}"
    table, windows = f"rest.{namespace}.sensor_readings", f"rest.{namespace}.value_1h"
    env = {"SPARK_REMOTE": remote, "LAKEHOUSE_CATALOG": "rest", "ICEBERG_REST_URI": services_env["ICEBERG_REST_URI"],
           "ICEBERG_WAREHOUSE": services_env["ICEBERG_WAREHOUSE"]}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"expectations": [
        {"type": "not_null", "column": "sensor"},
        {"type": "row_count_between", "min": 24, "max": 24}]}))
    out = tmp_path / "hourly.csv"

    def run(args):
        code, stdout, stderr = run_job(args, env)
        assert code == 0, f"lakehouse {args[0]} over Spark Connect failed:\n{stderr[-3000:]}"
        assert "Spark Connect " + remote in stderr  # it ran there, not in a driver of its own
        return stdout

    run(["register", "--source", lake.uri, "--table", table, "--audit", "audit_1"])
    run(["validate", "--table", table, "--spec", str(spec), "--branch", "audit_1"])
    run(["publish", "--table", table, "--branch", "audit_1"])
    run(["sql", f"SELECT sensor, count(*) AS n FROM {table} GROUP BY sensor ORDER BY sensor", "--output", str(out)])
    with open(next(out.glob("*.csv")), newline="") as handle:
        counts = {row["sensor"]: int(row["n"]) for row in csv.DictReader(handle)}
    assert counts == {"s-1": 12, "s/2": 12}

    run(["windows", "--table", table, "--output", windows, "--duration", "1h", "--aggregation", "count",
         "--value-column", "value", "--key-column", "sensor", "--timestamp-column", "ts_ms", "--order-by", "seq",
         "--partition-column", "sensor"])
    # What the edge emits for the same records: each sensor (the partition column) in `seq` order
    # through the edge's own engine; records that arrive after their hour closed are dropped.
    expected = sorted((w["key"], w["start"], w["value"]) for sensor in ("s-1", "s/2") for w in replay(
        [(sensor, r["ts_ms"], r["value"]) for r in sorted(records, key=lambda r: r["seq"]) if r["sensor"] == sensor],
        kind="tumbling", duration_ms=3_600_000, aggregation="count"))
    assert expected and sum(n for _, _, n in expected) < len(records)  # the late ones matter here

    def listed(name: str) -> list[tuple]:
        listing = tmp_path / name
        run(["sql", f"SELECT CAST(key AS STRING) AS k, window_start AS s, value AS n FROM {windows}",
             "--output", str(listing)])
        with open(next(listing.glob("*.csv")), newline="") as handle:
            return sorted((row["k"], int(row["s"]), int(float(row["n"]))) for row in csv.DictReader(handle))

    assert listed("windows.csv") == expected
    # a full rerun into the output: fixed windows by the exact plan, overwritten on the run's
    # branch and published by its fast-forward (all over Connect)
    said = run(["windows", "--table", table, "--output", windows, "--duration", "1h", "--aggregation", "count",
                "--value-column", "value", "--key-column", "sensor", "--timestamp-column", "ts_ms",
                "--order-by", "seq", "--partition-column", "sensor", "--full"])
    assert "strategy exact" in said
    assert listed("rerun.csv") == expected

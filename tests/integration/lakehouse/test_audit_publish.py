"""Write-audit-publish on a real Iceberg table: register --audit commits to a branch, validate
--branch checks it, publish fast-forwards main. A passing batch reaches main; a failing one never
does (main's readers never see its rows), is kept on its branch, its failing rows are quarantined,
and validate/publish exit non-zero."""

from __future__ import annotations

import json

import pytest
from lh_testkit import sensor_records

from lakehouse.audit import AuditError, branch_head, publish
from lakehouse.iceberg_tables import IcebergTable
from lakehouse.quality import ValidateOptions, run_validate
from lakehouse.register import RegisterOptions, run_register
from pipelines.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SPEC = {"expectations": [
    {"type": "not_null", "column": "sensor"},
    {"type": "between", "column": "value", "min": 0, "max": 1000},
    {"type": "unique", "column": "seq"},
    {"type": "row_count_between", "min": 1},
]}


def seqs(spark, sql: str) -> list[int]:
    return sorted(r.seq for r in spark.sql(sql).collect())


def test_passing_batch_is_published_failing_batch_is_quarantined(spark, edge_lake, make_target, tmp_path,
                                                                  monkeypatch, capsys):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target("embedded")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    table = IcebergTable(spark, target.name)
    main_rows = f"SELECT seq FROM {table.sql_name}"

    # a passing batch: on the branch only until published
    lake.write(sensor_records(20, 0))
    run_register(spark, RegisterOptions(source=lake.uri, table=target.name, audit_branch="audit_1"))
    assert seqs(spark, main_rows) == []
    assert seqs(spark, f"{main_rows} VERSION AS OF 'audit_1'") == list(range(20))
    with pytest.raises(AuditError, match=r"not validated at its current snapshot \d+ \(never validated\)"):
        publish(table, "audit_1")
    report = run_validate(spark, ValidateOptions(table=target.name, spec_path=str(spec), branch="audit_1"))
    assert not report.failed and "branch audit_1 validated, ready to publish" in report.summary_line()
    publish(table, "audit_1")
    assert seqs(spark, main_rows) == list(range(20))
    assert branch_head(table, "audit_1") is None  # published branches are dropped

    # a failing batch: a reading of 5000 and one without a sensor
    bad = [dict(r, value=5000.0) for r in sensor_records(1, 100)] + \
          [dict(r, sensor=None) for r in sensor_records(1, 101)]
    lake.write(sensor_records(5, 20) + bad)
    run_register(spark, RegisterOptions(source=lake.uri, table=target.name, audit_branch="audit_2"))
    report = run_validate(spark, ValidateOptions(table=target.name, spec_path=str(spec), branch="audit_2"))
    assert report.failed and report.quarantined == 2
    quarantine = f"{target.name}_quarantine"
    checks = sorted((r.seq, tuple(r._failed_checks), r._audit_branch)
                    for r in spark.table(quarantine).collect())
    assert checks == [(100, ("between(value)",), "audit_2"), (101, ("not_null(sensor)",), "audit_2")]
    with pytest.raises(AuditError, match="not validated"):
        publish(table, "audit_2")
    assert seqs(spark, main_rows) == list(range(20))  # readers of main never see the batch
    assert seqs(spark, f"{main_rows} VERSION AS OF 'audit_2'") == list(range(25)) + [100, 101]  # kept

    # the same steps from the command line exit non-zero
    for key, value in target.env.items():
        monkeypatch.setenv(key, value)
    assert main(["validate", "--table", target.name, "--spec", str(spec), "--branch", "audit_2",
                 "--quarantine", f"{target.name}_quarantine_cli"]) == 1
    assert main(["publish", "--table", target.name, "--branch", "audit_2"]) == 1
    err = capsys.readouterr().err
    assert "lakehouse publish: FAILED" in err and "main is untouched" in err
    assert seqs(spark, main_rows) == list(range(20))
    assert spark.table(f"{target.name}_quarantine_cli").count() == 2
    for name in (quarantine, f"{target.name}_quarantine_cli"):
        spark.sql(f"DROP TABLE IF EXISTS {name}")

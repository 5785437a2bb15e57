"""The ``lakehouse`` command and ``spark-submit pipelines/jobs/<job>.py`` run the same jobs; bad
arguments exit 2, failures exit 1 with one clear line, secrets never printed; the sql command."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from lh_testkit import REPO, sensor_records

from infra.local import spark_cds
from lakehouse.sql_query import run_sql
from pipelines.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture()
def target_env(monkeypatch):
    """Apply a target's environment to this process (in-process ``main`` reuses the session)."""
    def apply(target) -> None:
        for key, value in target.env.items():
            monkeypatch.setenv(key, value)
    return apply


def test_spark_submit_and_lakehouse_command_run_the_same_register_job(spark, edge_lake, make_target,
                                                                         target_env, capsys):
    lake = edge_lake()
    lake.write(sensor_records(16, 0))
    target = make_target("embedded")
    spark_submit = Path(sys.executable).with_name("spark-submit")
    # a user's environment: pyspark's own Spark home, the jars from the spark-defaults.conf that
    # ./dev bootstrap wrote there, not the suite's shared home and class path (infra/local/spark_cds.py)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "SPARK_CONF_DIR", "SPARK_DIST_CLASSPATH")}
    env.update(target.env, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_SUBMIT_OPTS=spark_cds.DRIVER_JVM_OPTS)
    proc = subprocess.run(
        [str(spark_submit), "pipelines/jobs/register.py", "--source", lake.uri, "--table", target.name,
         "--embedded-catalog"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith(f"register {target.name} (iceberg): files 0 -> 4, rows 0 -> 16")
    assert "files added 4" in summary

    # The same arguments through the console entry point (in this process, shared session).
    target_env(target)
    code = main(["register", "--source", lake.uri, "--table", target.name, "--embedded-catalog"])
    out = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 0
    assert out.startswith(f"register {target.name} (iceberg): files 4 -> 4, rows 16 -> 16")
    assert "files added 0" in out


@pytest.mark.parametrize("argv, message", [
    (["register", "--table", "lake.db.t"], "--source"),
    (["register", "--source", "/x", "--table", "lake.db.t", "--since", "yesterday"], "neither an ISO date"),
    (["compact", "--table", "lake.db.t", "--target-file-size", "big"], "not a size"),
    (["compact", "--table", "lake.db.t", "--retention", "7 days"], "not a duration"),
    (["register", "--source", "/x", "--table", "t", "--format", "hudi"], "invalid choice"),
    (["register", "--source", "/x", "--table", "sensors"], "[catalog.]db.table"),
    (["compact", "--table", "a.b.c", "--format", "delta"], "a Delta table is db.table"),
    (["compact", "--table", "lake.db.t; DROP TABLE x"], "not a dotted table name"),
    (["windows", "--table", "lake.db.t", "--output", "lake.db.w", "--value-column", "v"], "--duration"),
    (["windows", "--table", "lake.db.t", "--output", "w", "--duration", "1s", "--value-column", "v"],
     "--output: an Iceberg table is [catalog.]db.table"),
    (["windows", "--table", "lake.db.t", "--output", "lake.db.w", "--duration", "1 minute", "--value-column", "v"],
     "duration: not a duration"),
    (["windows", "--table", "lake.db.t", "--output", "lake.db.w", "--duration", "10s", "--kind", "hopping",
      "--value-column", "v"], "needs 0 < step < duration"),
    (["windows", "--table", "lake.db.t", "--output", "lake.db.w", "--duration", "1s", "--aggregation", "median",
      "--value-column", "v"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_a_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_job_failure_exits_1_with_one_line_and_no_secret(spark, make_target, target_env, monkeypatch, capsys):
    target = make_target("embedded")
    target_env(target)
    secret = "s3cr3tkey0042"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    code = main(["compact", "--table", f"embedded.lh_{secret}.missing", "--embedded-catalog"])
    err = capsys.readouterr().err
    assert code == 1
    assert "lakehouse compact: FAILED" in err and "does not exist" in err
    assert secret not in err and "embedded.lh_***.missing" in err


@pytest.mark.parametrize("kind", ["rest", "embedded", "delta"])
def test_sql_prints_a_table_and_writes_csv_and_parquet(spark, edge_lake, make_target, target_env, tmp_path, capsys,
                                                      kind):
    lake = edge_lake()
    lake.write(sensor_records(20, 0))
    target = make_target(kind)
    target_env(target)
    extra = ["--embedded-catalog"] if kind == "embedded" else []
    assert main(["register", "--source", lake.uri, "--table", target.name, "--format", target.table_format,
                 *extra]) == 0
    capsys.readouterr()

    query = f"SELECT sensor, count(*) AS n, round(avg(value), 2) AS mean FROM {target.name} GROUP BY sensor ORDER BY sensor"
    assert main(["sql", query, *extra]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("|")[0].strip() == "sensor"
    assert [line.split("|")[0].strip() for line in out[2:4]] == ["s-1", "s/2"]
    assert out[-1].startswith("sql: 2 rows")

    csv_dir = tmp_path / "out.csv"
    summary = run_sql(spark, query, output=str(csv_dir))
    assert summary.startswith(f"sql: 2 rows written to {csv_dir} (csv)")
    with open(next(csv_dir.glob("*.csv")), newline="") as handle:
        assert [row["sensor"] for row in csv.DictReader(handle)] == ["s-1", "s/2"]
    parquet_dir = tmp_path / "out.parquet"
    run_sql(spark, query, output=str(parquet_dir))
    assert spark.read.parquet(str(parquet_dir)).count() == 2


def test_sql_output_refuses_a_non_empty_path_without_overwrite(spark, tmp_path, capsys):
    """``sql --output`` never deletes what a path holds unless told to: a non-empty folder or a file
    is refused with exit code 1 and left as it was; an empty folder is written; ``--overwrite``
    replaces."""
    taken = tmp_path / "results"
    taken.mkdir()
    (taken / "keep.txt").write_text("precious")
    assert main(["sql", "SELECT 1 AS a", "--output", str(taken), "--output-format", "parquet"]) == 1
    err = capsys.readouterr().err
    assert "is not empty" in err and "--overwrite" in err
    assert (taken / "keep.txt").read_text() == "precious"
    a_file = tmp_path / "single.csv"
    a_file.write_text("x\n")
    with pytest.raises(ValueError, match="is not empty"):
        run_sql(spark, "SELECT 1 AS a", output=str(a_file))
    assert a_file.read_text() == "x\n"

    empty = tmp_path / "empty"
    empty.mkdir()
    run_sql(spark, "SELECT 2 AS a", output=str(empty), output_format="parquet")
    assert [r.a for r in spark.read.parquet(str(empty)).collect()] == [2]

    assert main(["sql", "SELECT 3 AS a", "--output", str(taken), "--output-format", "parquet", "--overwrite"]) == 0
    assert not (taken / "keep.txt").exists()
    assert [r.a for r in spark.read.parquet(str(taken)).collect()] == [3]

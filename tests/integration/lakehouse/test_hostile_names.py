"""Identifiers are data: record keys that break naive SQL (backtick, dash, space, dot, ``--``, SQL
keywords, unicode, 300 characters, a nested ``content-type``) go through the real edge sink ->
register -> windows -> compact -> windows -> validate -> sql, and Spark reads every row back (real
REST catalog, Delta, real Spark). The windows job takes its key, timestamp, value, order and
partition columns by such names, on both engines (native and python-engine, the latter through the
``lakehouse windows`` command line), and its rows equal the edge's own window engines' on the same
records."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from lh_testkit import BASE_TS, HOUR_MS

from lakehouse.compaction import CompactOptions, run_compact
from lakehouse.identifiers import quote_field_path, quote_identifier
from lakehouse.quality import run_validate
from lakehouse.quality_report import ValidateOptions
from lakehouse.register import RegisterOptions, run_register
from lakehouse.sql_query import run_sql
from lakehouse.windows import WindowRecomputeOptions, WindowSpec, run_window_recompute
from pipelines.cli import main
from stream_edge.dataframe.windows.replay import replay

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LONG = "l" * 300
HOSTILE = ["a`b", "content-type", "two words", "dot.ted", "x -- y", "select", "ünï©ødé ✓", LONG]
# the windows job's columns: key, event time, value, offset and Kafka partition, each hostile
KEY, TS, VALUE, OFFSET, PARTITION = "key`s.id -- select", "time stamp.ms", "temp-°C`", "off.set -- from", "part`ition"
WINDOW_COLUMNS = dict(key_column=KEY, timestamp_column=TS, value_column=VALUE, order_by=(PARTITION, OFFSET),
                      partition_column=PARTITION)
NATIVE = WindowSpec.parse("hopping", "1s", step="500ms", grace="200ms", aggregation="mean")
PYTHON = WindowSpec.parse("sliding", "1s", aggregation="max")


def records(start: int, n: int) -> list[dict]:
    out = []
    for i in range(start, start + n):
        record = {"ts_ms": BASE_TS + (i % 2) * HOUR_MS + i, "sensor": "s-1", "seq": i,
                  "headers": {"content-type": f"type-{i}", "a`b": i, "dot.ted": f"d{i}"}}
        record.update({name: f"{name[:8]}-{i}" for name in HOSTILE})
        # three keys on two Kafka partitions, event times mostly rising with a late record in four
        record.update({KEY: f"k{i % 3}", TS: BASE_TS + i * 400 - (900 if i % 4 == 3 else 0),
                       VALUE: round(i * 1.25 - 3, 2), OFFSET: i, PARTITION: i % 3 % 2})
        out.append(record)
    return out


def edge_windows(records: list[dict], spec: WindowSpec) -> list[tuple]:
    """What the edge's own engines emit: each partition's records in offset order."""
    result = []
    for partition in sorted({r[PARTITION] for r in records}):
        ordered = sorted((r for r in records if r[PARTITION] == partition), key=lambda r: r[OFFSET])
        result += [(w["key"], w["start"], w["end"], w["value"]) for w in replay(
            [(r[KEY], r[TS], r[VALUE]) for r in ordered], kind=spec.kind, duration_ms=spec.duration_ms,
            grace_ms=spec.grace_ms, step_ms=spec.step_ms, aggregation=spec.aggregation)]
    return sorted(result)


def window_rows(spark, output: str) -> list[tuple]:
    """Every row of a windows output, read back by Spark."""
    return sorted((r.key, r.window_start, r.window_end, r.value) for r in spark.table(output).collect())


def windows_by_command(target, output: str, output_format: str, spec: WindowSpec, monkeypatch) -> None:
    """The python-engine run through ``lakehouse windows``: the hostile names as a user passes them."""
    for key, value in target.env.items():
        monkeypatch.setenv(key, value)
    args = ["windows", "--table", target.name, "--format", target.table_format, "--output", output,
            "--output-format", output_format, "--kind", spec.kind, "--duration", f"{spec.duration_ms}ms",
            "--aggregation", str(spec.aggregation), "--engine", "python", "--value-column", VALUE,
            "--key-column", KEY, "--timestamp-column", TS, "--order-by", f"{PARTITION},{OFFSET}",
            "--partition-column", PARTITION]
    assert main(args) == 0


@pytest.mark.parametrize("kind", ["rest", "delta"])
def test_hostile_names_survive_every_job(spark, edge_lake, make_target, tmp_path, kind, monkeypatch, capsys):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    if kind == "delta":
        outputs = {name: (f"delta.`{tmp_path / name}`", "delta") for name in ("native", "python")}
    else:
        namespace = f"{target.name.rsplit('.', 1)[0]}_windows"  # dropped below with its tables
        outputs = {name: (f"{namespace}.{name}", "iceberg") for name in ("native", "python")}
    try:
        _every_job(spark, lake, target, outputs, tmp_path, monkeypatch, capsys)
    finally:
        if kind != "delta":
            for table in ("native", "native__window_state", "python", "python__window_state"):
                spark.sql(f"DROP TABLE IF EXISTS {namespace}.{table}")
            spark.sql(f"DROP NAMESPACE IF EXISTS {namespace}")


def _every_job(spark, lake, target, outputs, tmp_path, monkeypatch, capsys):
    added = 0
    native_output, native_format = outputs["native"]
    # on 6, then 9 records: a full run, then an incremental one (a Delta source: one full run)
    native_runs = (3, 6) if target.table_format == "iceberg" else (6,)
    for start in (0, 3, 6):  # three commits and runs: several small files per hour for compaction
        lake.write(records(start, 3))
        report = run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                                     table_format=target.table_format))
        added += report.extra["files added"]
        if start in native_runs:
            windows = run_window_recompute(spark, WindowRecomputeOptions(
                table=target.name, table_format=target.table_format, output=native_output,
                output_format=native_format, window=NATIVE, engine="native", **WINDOW_COLUMNS))
            assert windows.engine == "native", windows.summary_line()
            assert window_rows(spark, native_output) == edge_windows(lake.records, NATIVE)
    assert added == len(lake.data_files()) == 6
    assert windows.mode == ("incremental" if target.table_format == "iceberg" else "full"), windows.summary_line()
    assert len(edge_windows(lake.records, NATIVE)) >= 6

    def compact(zorder):
        return run_compact(spark, CompactOptions(table=target.name, table_format=target.table_format,
                                                 zorder=zorder, retention=timedelta(days=7),
                                                 orphan_retention=timedelta(days=3), cleanup=False))

    # z-order engines parse these names unquoted: refused up front, named, nothing rewritten
    with pytest.raises(ValueError, match=rf"--zorder 'a`b': {target.table_format}'s z-order"):
        compact(["a`b"])
    compacted = compact(["content-type", "select", "ünï©ødé ✓", LONG])
    assert compacted.extra["partitions compacted"] == 2, compacted.summary_line()

    python_output, python_format = outputs["python"]  # over the compacted table, through the CLI
    windows_by_command(target, python_output, python_format, PYTHON, monkeypatch)
    expected = edge_windows(lake.records, PYTHON)
    summary = capsys.readouterr().out
    assert f"9 rows in 3 groups -> {len(expected)} windows" in summary and "path full, python-engine" in summary
    assert len(expected) >= 6 and window_rows(spark, python_output) == expected

    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"expectations": [
        {"type": "columns_exist", "columns": HOSTILE},
        {"type": "not_null", "column": "a`b"},
        {"type": "regex", "column": "content-type", "pattern": "^content-"},
        {"type": "unique", "columns": ["select", "dot.ted"]},
        {"type": "row_count_between", "min": 9, "max": 9},
    ]}))
    validation = run_validate(spark, ValidateOptions(table=target.name, spec_path=str(spec),
                                                    table_format=target.table_format))
    assert not validation.failed, validation.summary_line()

    nested = [f"{quote_field_path(['headers', n])} AS {quote_identifier('h ' + n)}" for n in ("content-type", "a`b",
                                                                                          "dot.ted")]
    columns = ", ".join([quote_identifier("seq"), *(quote_identifier(n) for n in HOSTILE), *nested])
    out = tmp_path / "out.parquet"
    run_sql(spark, f"SELECT {columns} FROM {target.sql_name()}", output=str(out))
    rows = sorted((tuple(r) for r in spark.read.parquet(str(out)).collect()), key=lambda r: r[0])
    expected = sorted(((r["seq"], *(r[n] for n in HOSTILE), r["headers"]["content-type"], r["headers"]["a`b"],
                        r["headers"]["dot.ted"]) for r in lake.records), key=lambda r: r[0])
    assert rows == expected

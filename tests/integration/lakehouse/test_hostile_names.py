"""Identifiers are data: record keys that break naive SQL (backtick, dash, space, dot, ``--``, SQL
keywords, unicode, 300 characters, a nested ``content-type``) go through the real edge sink ->
register -> compact -> validate -> sql, and Spark reads every row back (real REST catalog, Delta,
real Spark)."""

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

pytestmark = [pytest.mark.integration, pytest.mark.spark]

LONG = "l" * 300
HOSTILE = ["a`b", "content-type", "two words", "dot.ted", "x -- y", "select", "ünï©ødé ✓", LONG]


def records(start: int, n: int) -> list[dict]:
    out = []
    for i in range(start, start + n):
        record = {"ts_ms": BASE_TS + (i % 2) * HOUR_MS + i, "sensor": "s-1", "seq": i,
                  "headers": {"content-type": f"type-{i}", "a`b": i, "dot.ted": f"d{i}"}}
        record.update({name: f"{name[:8]}-{i}" for name in HOSTILE})
        out.append(record)
    return out


@pytest.mark.parametrize("kind", ["rest", "delta"])
def test_hostile_names_survive_every_job(spark, edge_lake, make_target, tmp_path, kind):
    lake = edge_lake(hive_columns=("year", "month", "day", "hour"))
    target = make_target(kind)
    added = 0
    for start in (0, 3, 6):  # three commits and runs: several small files per hour for compaction
        lake.write(records(start, 3))
        report = run_register(spark, RegisterOptions(source=lake.uri, table=target.name,
                                                     table_format=target.table_format))
        added += report.extra["files added"]
    assert added == len(lake.data_files()) == 6

    def compact(zorder):
        return run_compact(spark, CompactOptions(table=target.name, table_format=target.table_format,
                                                 zorder=zorder, retention=timedelta(days=7),
                                                 orphan_retention=timedelta(days=3), cleanup=False))

    # z-order engines parse these names unquoted: refused up front, named, nothing rewritten
    with pytest.raises(ValueError, match=rf"--zorder 'a`b': {target.table_format}'s z-order"):
        compact(["a`b"])
    compacted = compact(["content-type", "select", "ünï©ødé ✓", LONG])
    assert compacted.extra["partitions compacted"] == 2, compacted.summary_line()

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

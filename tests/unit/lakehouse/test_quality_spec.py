"""The expectations spec (pure parsing: no Spark) and the pure parts of the validate report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lakehouse.quality import ExpectationResult, ValidationReport, docs_name, gx_expectations
from lakehouse.quality_spec import QualitySpecError, load_spec, parse_spec, spec_from_dict

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "pipelines" / "quality" / "sensor_readings.json"


def test_the_example_spec_covers_the_demo_columns():
    spec = load_spec(EXAMPLE)
    assert spec.source == str(EXAMPLE) and spec.description
    labels = [e.label for e in spec.expectations]
    assert labels == ["columns_exist(sensor,ts_ms,temperature,humidity,year,month,day,hour)", "row_count_between",
                      "not_null(sensor)", "not_null(ts_ms)", "regex(sensor)", "in_set(sensor)",
                      "between(temperature)", "between(humidity)", "between(hour)", "unique(sensor,ts_ms)"]
    temperature = spec.expectations[6]
    assert (temperature.min, temperature.max, temperature.mostly, temperature.severity) == (-50, 150, 0.999, "critical")
    assert spec.expectations[5].severity == "warning"
    assert load_spec(EXAMPLE.as_uri()).expectations == spec.expectations


def test_every_type_parses_into_its_fields():
    spec = spec_from_dict({"description": "all types", "expectations": [
        {"type": "not_null", "column": "a", "mostly": 0.5},
        {"type": "between", "column": "b", "max": 3.5, "severity": "info", "description": "upper bound only"},
        {"type": "in_set", "column": "c", "values": ["x", 1, True]},
        {"type": "regex", "column": "d", "pattern": "^[a-z]+$"},
        {"type": "unique", "column": "e"},
        {"type": "unique", "columns": ["f"]},
        {"type": "unique", "columns": ["g", "h"], "mostly": 1},
        {"type": "row_count_between", "min": 0, "max": 10},
        {"type": "columns_exist", "columns": ["a", "b"]},
    ]}, source="all.json")
    e = spec.expectations
    assert [x.index for x in e] == list(range(9))
    assert (e[0].column, e[0].mostly, e[0].severity) == ("a", 0.5, "critical")
    assert (e[1].min, e[1].max, e[1].severity, e[1].description) == (None, 3.5, "info", "upper bound only")
    assert e[2].values == ("x", 1, True)
    assert e[3].pattern == "^[a-z]+$"
    assert (e[4].column, e[4].columns) == ("e", ())
    assert (e[5].column, e[5].columns) == ("f", ())  # a one-column key is a plain unique
    assert (e[6].column, e[6].columns, e[6].mostly) == (None, ("g", "h"), 1.0)
    assert (e[7].min, e[7].max, e[7].label) == (0, 10, "row_count_between")
    assert e[8].columns == ("a", "b") and e[8].label == "columns_exist(a,b)"


ENTRY_ERRORS = [
    ({"type": "between", "column": "t", "min": "cold"}, "expectations[0] (between): field 'min': must be a number, got \"cold\""),
    ({"type": "between", "column": "t", "min": True}, "field 'min': must be a number, got true"),
    ({"type": "between", "column": "t", "min": 10, "max": 5}, "field 'min': 10 is greater than max 5"),
    ({"type": "between", "column": "t"}, "field 'min': needs 'min', 'max' or both"),
    ({"type": "between", "column": "t", "maximum": 5}, "(between): field 'maximum': unknown field (allowed for between:"),
    ({"type": "between", "min": 1}, "(between): field 'column': missing (required for this type)"),
    ({"type": "not_null", "column": ""}, "(not_null): field 'column': must be a non-empty column name"),
    ({"type": "not_null", "column": ["a"]}, "field 'column': must be a non-empty column name, got [\"a\"]"),
    ({"column": "a"}, "expectations[0]: field 'type': missing; one of not_null, between"),
    ({"type": "not_empty", "column": "a"}, "field 'type': unknown expectation type \"not_empty\""),
    ({"type": "not_null", "column": "a", "mostly": 1.5}, "field 'mostly': must be a fraction with 0 < mostly <= 1"),
    ({"type": "not_null", "column": "a", "mostly": 0}, "field 'mostly': must be a fraction with 0 < mostly <= 1"),
    ({"type": "row_count_between", "min": 1, "mostly": 0.9},
     "(row_count_between): field 'mostly': unknown field ('mostly' applies only to"),
    ({"type": "row_count_between", "min": -1}, "field 'min': must be a non-negative integer, got -1"),
    ({"type": "row_count_between", "max": 1.5}, "field 'max': must be a non-negative integer, got 1.5"),
    ({"type": "not_null", "column": "a", "severity": "fatal"},
     "field 'severity': must be one of critical, warning, info, got \"fatal\""),
    ({"type": "not_null", "column": "a", "description": 3}, "field 'description': must be a string, got 3"),
    ({"type": "in_set", "column": "a", "values": []}, "(in_set): field 'values': must be a non-empty list, got []"),
    ({"type": "in_set", "column": "a", "values": ["x", None]}, "field 'values': item 1 must be a string, number or boolean"),
    ({"type": "regex", "column": "a", "pattern": "(unclosed"}, "(regex): field 'pattern': not a valid regular expression"),
    ({"type": "unique", "column": "a", "columns": ["a", "b"]}, "(unique): field 'column': give exactly one of 'column'"),
    ({"type": "unique"}, "(unique): field 'column': give exactly one of 'column'"),
    ({"type": "columns_exist", "columns": ["a", "a"]}, "(columns_exist): field 'columns': lists 'a' more than once"),
    ({"type": "columns_exist", "columns": ["a", 7]}, "field 'columns': item 1 must be a non-empty column name, got 7"),
    ({"type": "columns_exist", "columns": "a"}, "field 'columns': must be a non-empty list of column names"),
    ("not_null", "expectations[0]: must be an object with a 'type', got a string"),
]


@pytest.mark.parametrize("entry, message", ENTRY_ERRORS)
def test_a_bad_entry_names_file_entry_and_field(entry, message):
    # The bad entry comes second, after a good one: the index in the message is its own.
    text = json.dumps({"expectations": [{"type": "not_null", "column": "ok"}, entry]})
    with pytest.raises(QualitySpecError) as exc:
        parse_spec(text, source="quality/t.json")
    assert str(exc.value).startswith("quality/t.json: expectations[1]")
    assert message.replace("expectations[0]", "expectations[1]") in str(exc.value)


@pytest.mark.parametrize("text, message", [
    ('{"expectations": [{"type": "not_null", "column": "a",}]}', "t.json: not valid JSON: Expecting property name"),
    ('[{"type": "not_null", "column": "a"}]', "t.json: the spec must be a JSON object with an 'expectations' list, got a list"),
    ('{"description": "no checks"}', "t.json: missing field 'expectations'"),
    ('{"expectations": []}', "t.json: field 'expectations' must be a non-empty list, got []"),
    ('{"expectation": [{"type": "not_null", "column": "a"}]}', "t.json: unknown top-level field 'expectation'"),
    ('{"expectations": [{"type": "between", "column": "a", "min": 1, "min": 2}]}', "t.json: field 'min' appears twice"),
    ('{"expectations": [{"type": "between", "column": "a", "min": NaN}]}', "field 'min': must be a number, got NaN"),
    ('{"expectations": [{"type": "not_null", "column": "a"}], "description": 5}', "field 'description' must be a string"),
])
def test_a_bad_file_says_what_is_wrong(text, message):
    with pytest.raises(QualitySpecError) as exc:
        parse_spec(text, source="t.json")
    assert message in str(exc.value)


def test_json_syntax_errors_give_the_line_and_files_are_named(tmp_path):
    path = tmp_path / "sensors.json"
    path.write_text('{\n  "expectations": [\n    {"type": "not_null" "column": "a"}\n  ]\n}\n')
    with pytest.raises(QualitySpecError, match=r"sensors\.json: not valid JSON: Expecting ',' delimiter at line 3"):
        load_spec(path)
    with pytest.raises(QualitySpecError, match=r"nowhere\.json: spec file not found"):
        load_spec(tmp_path / "nowhere.json")
    path.write_bytes(b"\xff\xfe{")
    with pytest.raises(QualitySpecError, match=r"sensors\.json: cannot read the spec file"):
        load_spec(path)


def test_spec_entries_map_onto_great_expectations_classes():
    spec = spec_from_dict({"expectations": [
        {"type": "columns_exist", "columns": ["a", "b"], "severity": "info"},
        {"type": "between", "column": "t", "min": -5, "mostly": 0.9, "description": "cold is fine"},
        {"type": "unique", "columns": ["a", "b"]},
        {"type": "in_set", "column": "a", "values": ["x"]},
        {"type": "regex", "column": "a", "pattern": "^x$"},
        {"type": "row_count_between", "max": 9},
    ]})
    made = gx_expectations(spec)
    assert [type(e).__name__ for e in made] == [
        "ExpectColumnToExist", "ExpectColumnToExist", "ExpectColumnValuesToBeBetween", "ExpectCompoundColumnsToBeUnique",
        "ExpectColumnValuesToBeInSet", "ExpectColumnValuesToMatchRegex", "ExpectTableRowCountToBeBetween"]
    assert [e.meta["lakehouse"] for e in made] == [
        {"entry": 0, "order": 0}, {"entry": 0, "order": 1}, {"entry": 1, "order": 2}, {"entry": 2, "order": 3},
        {"entry": 3, "order": 4}, {"entry": 4, "order": 5}, {"entry": 5, "order": 6}]
    assert [made[0].column, made[1].column] == ["a", "b"] and made[0].severity.value == "info"
    between = made[2]
    assert (between.min_value, between.max_value, between.mostly, between.description) == (-5, None, 0.9, "cold is fine")
    assert list(made[3].column_list) == ["a", "b"] and made[4].value_set == ["x"] and made[5].regex == "^x$"
    assert (made[6].min_value, made[6].max_value, made[6].severity.value) == (None, 9, "critical")


def test_docs_names_are_safe_path_components():
    assert docs_name("lake.db.sensor_readings") == "lake.db.sensor_readings"
    assert docs_name("delta.`/data/delta/sensor readings`") == "delta.data_delta_sensor_readings"
    assert docs_name("delta.`file:///a/../b`") == "delta.file_a.b"
    assert "/" not in docs_name("../../etc/passwd") and ".." not in docs_name("../../etc/passwd")
    assert docs_name("``") == "table"


def result(label: str, success: bool, severity: str = "critical", **kwargs) -> ExpectationResult:
    kind = label.split("(")[0]
    return ExpectationResult(index=0, type=kind, label=label, expectation=f"expect_{kind}", column=None,
                             severity=severity, success=success, **kwargs)


def test_the_report_fails_only_on_critical_failures_and_errors():
    report = ValidationReport("lake.db.t", "iceberg", "t.json", rows=100, duration_s=1.25, results=[
        result("not_null(a)", True, element_count=100, unexpected_count=0, unexpected_percent=0.0),
        result("between(t)", False, "warning", element_count=100, unexpected_count=4, unexpected_percent=4.0,
               examples=[999.0]),
        result("row_count_between", True, observed_value=100),
    ])
    assert not report.failed and (report.passed, report.total) == (2, 3)
    assert report.summary_line() == ("validate lake.db.t (iceberg): passed, rows 100, expectations 2/3 passed, "
                                     "warnings: between(t) [4 unexpected], in 1.2s")
    assert [r.describe() for r in report.results] == [
        "ok not_null(a): 0 unexpected of 100 rows (0.00%)",
        "WARNING between(t): 4 unexpected of 100 rows (4.00%), e.g. 999.0",
        "ok row_count_between: observed 100"]
    null_check = result("not_null(s)", False, element_count=2, unexpected_count=1, unexpected_percent=50.0,
                        examples=[None])
    assert null_check.describe() == "FAILED not_null(s): 1 unexpected of 2 rows (50.00%)"

    report.results.append(result("not_null(x)", False, "info", error="The column \"x\" does not exist."))
    report.results.append(result("columns_exist(y)", False))
    report.data_docs_page = "/docs/validations/t.html"
    assert report.failed and [r.label for r in report.failures] == ["not_null(x)", "columns_exist(y)"]
    assert report.summary_line() == (
        "validate lake.db.t (iceberg): FAILED, rows 100, expectations 2/5 passed, "
        "failed: not_null(x) [error], columns_exist(y) [missing], warnings: between(t) [4 unexpected], "
        "data docs /docs/validations/t.html, in 1.2s")
    assert str(report.error()) == (
        "2 of 5 expectations failed on lake.db.t: FAILED not_null(x): could not be evaluated: "
        "The column \"x\" does not exist.; FAILED columns_exist(y): column not found")


def test_the_summary_line_masks_secrets(monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t-value")
    report = ValidationReport("lake.s3cr3t-value.t", "iceberg", "t.json", data_docs_error="cannot write")
    assert "s3cr3t-value" not in report.summary_line() and "lake.***.t" in report.summary_line()
    assert "data docs NOT written (cannot write)" in report.summary_line()

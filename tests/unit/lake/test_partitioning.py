"""Hive/Spark partition path escaping, time columns and NULL handling (pure layout)."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream_edge.lake import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    parse_partition_path,
    partition_path,
    partition_segment,
    partition_value_string,
    time_partition_values,
    unescape_path_name,
    validate_hive_columns,
)

# Spark's ExternalCatalogUtils.charToEscape on Linux, written out independently for the test.
SPARK_ESCAPED = {chr(c) for c in range(1, 0x20)} | set('"#%\'*/:=?\\\x7f{[]^')


@pytest.mark.parametrize("value, expected", [
    ("plain", "plain"),
    ("../x", "..%2Fx"),
    ("a/b", "a%2Fb"),
    ("=", "%3D"),
    ("%", "%25"),
    ("50%/off", "50%25%2Foff"),
    ("tab\there", "tab%09here"),
    ("new\nline", "new%0Aline"),
    ('q"\'*:?\\{[]^#', "q%22%27%2A%3A%3F%5C%7B%5B%5D%5E%23"),
    ("del\x7f", "del%7F"),
    ("nul\x00", "nul%00"),
    ("ünïcødé ✓ 温度", "ünïcødé ✓ 温度"),
    ("spaces and <>|", "spaces and <>|"),
    ("..", ".."),
    (".", "."),
])
def test_escape_matches_spark(value, expected):
    assert escape_path_name(value) == expected
    assert unescape_path_name(expected) == value


def test_every_ascii_char_escaped_exactly_when_spark_does():
    for code in range(1, 128):
        char = chr(code)
        escaped = escape_path_name(char)
        if char in SPARK_ESCAPED:
            assert escaped == f"%{code:02X}", repr(char)
        else:
            assert escaped == char, repr(char)


def test_unescape_leaves_invalid_sequences_like_spark():
    assert unescape_path_name("100%") == "100%"
    assert unescape_path_name("%zz") == "%zz"
    assert unescape_path_name("%4") == "%4"
    assert unescape_path_name("%41%4a") == "AJ"


@given(st.text())
def test_escape_round_trips_and_never_adds_a_level(value):
    escaped = escape_path_name(value)
    assert unescape_path_name(escaped) == value
    assert "/" not in escaped and "=" not in escaped and "\\" not in escaped


@given(st.lists(st.one_of(st.none(), st.text(), st.integers(), st.booleans()), min_size=1, max_size=4))
def test_partition_path_stays_inside_the_table_root(values):
    columns = [f"c{i}" for i in range(len(values))]
    path = partition_path(columns, values)
    root = "/lake/table"
    resolved = posixpath.normpath(posixpath.join(root, path))
    assert resolved.startswith(root + "/")
    assert len(path.split("/")) == len(values)
    parsed = parse_partition_path(path)
    assert [c for c, _ in parsed] == columns
    assert [v for _, v in parsed] == [partition_value_string(v) for v in values]


@pytest.mark.parametrize("value", [None, "", float("nan")])
def test_null_and_empty_go_to_the_default_partition(value):
    assert partition_segment("sensor", value) == f"sensor={DEFAULT_PARTITION_NAME}"
    assert parse_partition_path(f"sensor={DEFAULT_PARTITION_NAME}") == [("sensor", None)]


@pytest.mark.parametrize("value, text", [
    (True, "true"), (False, "false"), (7, "7"), (-3, "-3"), (1.5, "1.5"), (b"raw", "raw"), ("s", "s"),
])
def test_value_text_like_spark_string_cast(value, text):
    assert partition_value_string(value) == text


def test_column_names_are_escaped_too():
    assert partition_segment("a=b/c", "v") == "a%3Db%2Fc=v"
    assert parse_partition_path("a%3Db%2Fc=v") == [("a=b/c", "v")]


@pytest.mark.parametrize("ts_ms, expected", [
    (0, ("1970", "01", "01", "00")),
    (1_704_067_199_999, ("2023", "12", "31", "23")),   # last ms of 2023 UTC
    (1_704_067_200_000, ("2024", "01", "01", "00")),   # first ms of 2024 UTC
    (1_709_210_096_000, ("2024", "02", "29", "12")),   # leap day
    (1_745_311_234_567, ("2025", "04", "22", "08")),
    (1_745_311_234_567.9, ("2025", "04", "22", "08")),
])
def test_time_partition_values_utc_zero_padded(ts_ms, expected):
    values = time_partition_values(ts_ms)
    assert (values["year"], values["month"], values["day"], values["hour"]) == expected


def test_time_partition_values_for_missing_timestamp():
    assert time_partition_values(None) == {"year": None, "month": None, "day": None, "hour": None}


def test_parse_rejects_non_partition_levels():
    with pytest.raises(ValueError):
        parse_partition_path("year=2024/notapartition")
    with pytest.raises(ValueError):
        parse_partition_path("=x")


def test_validate_hive_columns():
    assert validate_hive_columns(["year", "sensor"]) == ["year", "sensor"]
    assert validate_hive_columns(None) == []
    with pytest.raises(ValueError):
        validate_hive_columns(["year", "year"])
    with pytest.raises(ValueError):
        validate_hive_columns([""])


def test_partition_path_arity_checked():
    with pytest.raises(ValueError):
        partition_path(["a", "b"], ["x"])
    assert partition_path([], []) == ""

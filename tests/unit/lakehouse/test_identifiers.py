"""The one quoting function for names from records and the command line (pure logic)."""

from __future__ import annotations

import pytest

from lakehouse.identifiers import quote_field_path, quote_identifier, quote_table_name, split_multipart
from lakehouse.schema_evolution import arrow_to_spark, spark_type_text

HOSTILE = ["a`b", "content-type", "two words", "dot.ted", "x -- y", "select", "from", "ünï©ødé ✓",
           "n" * 300, "`", "``", "'quote'", 'dq"', "semi;colon", "back\\slash", "new\nline"]


def unquote(text: str) -> str:
    """Spark's reading of one quoted identifier (the inverse the tests check against)."""
    assert text.startswith("`") and text.endswith("`")
    body = text[1:-1]
    assert "`" not in body.replace("``", ""), f"an unescaped backtick in {text!r}"
    return body.replace("``", "`")


@pytest.mark.parametrize("name", HOSTILE)
def test_quote_identifier_round_trips_every_name(name):
    quoted = quote_identifier(name)
    assert unquote(quoted) == name
    assert split_multipart(quoted) == [name]


def test_quote_identifier_refuses_empty_and_non_strings():
    with pytest.raises(ValueError, match="empty"):
        quote_identifier("")
    with pytest.raises(TypeError, match="int"):
        quote_identifier(3)  # type: ignore[arg-type]


def test_field_path_quotes_each_part_alone():
    assert quote_field_path(["headers", "content-type"]) == "`headers`.`content-type`"
    assert quote_field_path(["a.b", "c`d"]) == "`a.b`.`c``d`"
    assert split_multipart(quote_field_path(HOSTILE)) == HOSTILE
    with pytest.raises(ValueError):
        quote_field_path([])


@pytest.mark.parametrize("text, parts", [
    ("lake.db.t", ["lake", "db", "t"]),
    ("lake.`my.db`.t", ["lake", "my.db", "t"]),
    ("`a``b`.c", ["a`b", "c"]),
    (" db . t ", ["db", "t"]),
])
def test_split_multipart(text, parts):
    assert split_multipart(text) == parts
    assert split_multipart(quote_table_name(text)) == parts


@pytest.mark.parametrize("bad", ["a..b", "`a", "a`b.c", "`a`b.c", "a.", ""])
def test_split_multipart_refuses_malformed_names(bad):
    with pytest.raises(ValueError):
        split_multipart(bad)


def test_nested_type_text_quotes_field_names_and_matches_sparks_schema():
    import pyarrow as pa
    from pyspark.sql.types import ArrayType, LongType, MapType, StringType, StructField, StructType

    arrow = pa.struct([("content-type", pa.string()), ("a`b", pa.list_(pa.int64())),
                       ("m", pa.map_(pa.string(), pa.int64()))])
    spark = StructType([StructField("content-type", StringType()), StructField("a`b", ArrayType(LongType())),
                        StructField("m", MapType(StringType(), LongType()))])
    text = arrow_to_spark(arrow)
    assert text == "struct<`content-type`:string,`a``b`:array<bigint>,`m`:map<string,bigint>>"
    assert spark_type_text(spark) == text  # a live table's type compares equal to a file's

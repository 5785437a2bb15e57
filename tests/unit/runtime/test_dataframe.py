"""StreamingDataFrame / StreamingSeries operations, run through sdf.test()."""

import pytest

from stream_edge.dataframe.exceptions import DuplicateStreamingDataFrame, GroupByDuplicate, GroupByLimitExceeded, InvalidOperation
from stream_edge.models import Topic


def values(results):
    return [r[0] for r in results]


def test_apply_filter_update(sdf):
    sdf = sdf.apply(lambda v: {**v, "b": v["a"] * 2}).filter(lambda v: v["b"] > 2)
    sdf.update(lambda v: v.setdefault("seen", True))
    assert values(sdf.test({"a": 2})) == [{"a": 2, "b": 4, "seen": True}]
    assert sdf.test({"a": 1}) == []


def test_apply_expand_and_metadata(sdf):
    sdf = sdf.apply(lambda v: v["items"], expand=True)
    sdf = sdf.apply(lambda v, k, ts, h: f"{v}:{k.decode()}:{ts}", metadata=True)
    assert values(sdf.test({"items": [1, 2]}, key=b"k", timestamp=9)) == ["1:k:9", "2:k:9"]


def test_filter_and_update_with_metadata(sdf):
    sdf = sdf.filter(lambda v, k, ts, h: k == b"yes", metadata=True)
    sdf.update(lambda v, k, ts, h: v.update(ts=ts), metadata=True)
    assert values(sdf.test({}, key=b"yes", timestamp=3)) == [{"ts": 3}]
    assert sdf.test({}, key=b"no") == []


def test_column_get_set_and_series_arithmetic(sdf):
    sdf["sum"] = sdf["a"] + sdf["b"]
    sdf["scaled"] = (sdf["a"] * 10 - 1) / 2
    sdf["mod"] = sdf["b"] % 2
    sdf["floordiv"] = sdf["b"] // 2
    sdf["neg_abs"] = (0 - sdf["a"]).abs()
    sdf["const"] = 5
    sdf["nested"] = sdf["n"]["x"]
    out = values(sdf.test({"a": 3, "b": 5, "n": {"x": 1}}))[0]
    assert out["sum"] == 8 and out["scaled"] == 14.5 and out["mod"] == 1 and out["floordiv"] == 2
    assert out["neg_abs"] == 3 and out["const"] == 5 and out["nested"] == 1


def test_series_comparison_and_logic(sdf):
    sdf["gt"] = sdf["a"] > 2
    sdf["le"] = sdf["a"] <= 2
    sdf["eq"] = sdf["a"] == sdf["b"]
    sdf["ne"] = sdf["a"] != 3
    sdf["both"] = (sdf["a"] > 2) & (sdf["b"] < 10)
    sdf["either"] = (sdf["a"] > 100) | (sdf["b"] == 5)
    sdf["not"] = ~(sdf["a"] > 2)
    out = values(sdf.test({"a": 3, "b": 5}))[0]
    assert (out["gt"], out["le"], out["eq"], out["ne"], out["both"], out["either"], out["not"]) == \
        (True, False, False, False, True, True, False)


def test_series_membership_and_nulls(sdf):
    sdf["isin"] = sdf["a"].isin([1, 2, 3])
    sdf["contains"] = sdf["s"].contains("ell")
    sdf["is_none"] = sdf["n"].is_(None)
    sdf["isnot"] = sdf["n"].isnot(None)
    sdf["isnull"] = sdf["n"].isnull()
    sdf["notnull"] = sdf["a"].notnull()
    sdf["applied"] = sdf["s"].apply(str.upper)
    sdf["has_s"] = sdf.contains("s")
    out = values(sdf.test({"a": 3, "s": "hello", "n": None}))[0]
    assert out["isin"] and out["contains"] and out["is_none"] and not out["isnot"]
    assert out["isnull"] and out["notnull"] and out["applied"] == "HELLO" and out["has_s"]


def test_series_as_filter_and_column_selection(sdf):
    sdf = sdf[sdf["a"] > 1]
    sdf = sdf[["a", "b"]]
    assert values(sdf.test({"a": 2, "b": 1, "c": 0})) == [{"a": 2, "b": 1}]
    assert sdf.test({"a": 1, "b": 1}) == []
    from stream_edge.core.stream.exceptions import InvalidOperation
    with pytest.raises(InvalidOperation):
        bool(sdf["a"] > 1)


def test_series_needing_metadata_in_assignment(sdf):
    from stream_edge.dataframe import StreamingSeries
    key_series = StreamingSeries.from_apply_callback(lambda v, k, ts, h: k.decode())
    sdf["key"] = key_series + "!"
    assert values(sdf.test({}, key=b"abc"))[0] == {"key": "abc!"}


def test_drop(sdf):
    sdf.drop(["x", "y"])
    assert values(sdf.test({"x": 1, "y": 2, "z": 3})) == [{"z": 3}]
    with pytest.raises(KeyError):
        sdf.test({"z": 1})
    other = sdf.apply(lambda v: v)
    other.drop("missing", errors="ignore")
    assert values(other.test({"x": 1, "y": 1, "z": 1})) == [{"z": 1}]


def test_set_timestamp_and_headers(sdf):
    sdf = sdf.set_timestamp(lambda v, k, ts, h: v["t"])
    sdf = sdf.set_headers(lambda v, k, ts, h: [("src", b"edge")])
    (value, key, ts, headers), = sdf.test({"t": 77}, timestamp=1)
    assert ts == 77 and headers == [("src", b"edge")]


def test_to_topic_with_and_without_key(sdf, producer):
    out, keyed = Topic("out", value_serializer="json"), Topic("keyed", value_serializer="json")
    sdf.to_topic(out)
    sdf.to_topic(keyed, key=lambda v: v["id"])
    sdf.test({"id": "x1"}, key=b"orig", timestamp=5)
    assert producer.produced == [("out", {"id": "x1"}, b"orig", 5, None), ("keyed", {"id": "x1"}, "x1", 5, None)]


def test_branching_keeps_branches_independent(sdf):
    a = sdf.apply(lambda v: {**v, "branch": "a"})
    b = sdf.apply(lambda v: {**v, "branch": "b"})
    b.update(lambda v: v.update(extra=1))
    results = values(sdf.test({"x": 1}))
    assert {"x": 1, "branch": "a"} in results and {"x": 1, "branch": "b", "extra": 1} in results
    assert a.stream.parent is b.stream.parent.parent or a.stream.parent is sdf.stream


def test_compose_returns_executor_per_topic(sdf):
    sdf = sdf.apply(lambda v: v + 1)
    out = []
    executors = sdf.compose(sink=lambda v, k, t, h: out.append(v))
    executors["in"](1, b"k", 0, None)
    assert list(executors) == ["in"] and out == [2]


def test_print(sdf, capsys):
    sdf.print(pretty=False, metadata=True)
    sdf.test({"a": 1}, key=b"k", timestamp=3)
    assert "'value': {'a': 1}" in capsys.readouterr().out


def test_group_by_writes_to_repartition_topic(sdf, producer):
    grouped = sdf.group_by("user")
    assert grouped.topic.name == "repartition__g--in--user"
    sdf.test({"user": "u1"}, key=b"k")
    assert producer.produced[-1][0] == "repartition__g--in--user" and producer.produced[-1][2] == "u1"
    with pytest.raises(GroupByLimitExceeded):
        grouped.group_by("other")
    with pytest.raises(ValueError, match="name"):
        sdf.group_by(lambda v: v["user"])


def test_group_by_on_one_partition_rekeys_in_place(sdf, producer):
    sdf._topic_manager.partitions = 1
    grouped = sdf.group_by("user")
    assert grouped.topic.name == "in" and grouped.stream_id == "in--groupby--user"
    assert grouped.apply(lambda v, k, ts, h: k, metadata=True).test({"user": "u1"}, key=b"k") == [
        ("u1", "u1", 0, None)]
    assert producer.produced == []  # no repartition topic
    with pytest.raises(GroupByDuplicate):
        sdf.group_by("user")


def test_duplicate_dataframe_for_a_topic(sdf):
    from stream_edge.dataframe import StreamingDataFrame
    with pytest.raises(DuplicateStreamingDataFrame):
        sdf.registry.register_root(StreamingDataFrame(sdf.topic, topic_manager=None, registry=sdf.registry,
                                                      processing_context=sdf.processing_context))


def test_expanding_op_seam(sdf):
    windowed = sdf.add_expanding_op(lambda v, k, ts, h: [(v * 2, k, ts + 1, h), (v * 3, k, ts + 2, h)])
    assert windowed.test(1, timestamp=0) == [(2, b"key", 1, None), (3, b"key", 2, None)]


def test_assign_and_filter_with_another_dataframe_result(sdf):
    sdf["double"] = sdf.apply(lambda v: v["a"] * 2)
    sdf = sdf[sdf.apply(lambda v: v["double"] > 2)]
    assert values(sdf.test({"a": 2})) == [{"a": 2, "double": 4}]  # the applies ran once, not as branches
    assert sdf.test({"a": 1}) == []


def test_assigning_a_dataframe_takes_the_steps_added_after_it_too(sdf):
    # as on quixstreams 3.28.1: the diff carries what was added after ``other``; a second use is refused
    other = sdf.apply(lambda v: 1)
    other.apply(lambda v: 2)
    sdf["x"] = other
    assert values(sdf.test({"a": 1})) == [{"a": 1, "x": 2}]
    with pytest.raises(InvalidOperation, match="more than once"):
        sdf["y"] = other

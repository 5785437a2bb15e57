"""Stream trees compose into one executor: apply/update/filter/transform, expand, branches."""

import pytest

from stream_edge.core.stream import Stream
from stream_edge.core.stream.exceptions import InvalidOperation, InvalidTopology


def run(stream: Stream, value, key=b"k", ts=0, headers=None):
    out = []
    stream.compose_single(sink=lambda v, k, t, h: out.append((v, k, t, h)))(value, key, ts, headers)
    return out


def test_chain_of_apply_filter_update():
    s = Stream().add_apply(lambda v: v + 1).add_filter(lambda v: v % 2 == 0).add_update(lambda v: None)
    assert run(s, 1) == [(2, b"k", 0, None)]
    assert run(s, 2) == []


def test_expand_emits_each_item_and_rejects_non_iterables():
    s = Stream().add_apply(lambda v: [v, v * 10], expand=True)
    assert [r[0] for r in run(s, 3)] == [3, 30]
    with pytest.raises(TypeError, match="iterable"):
        run(Stream().add_apply(lambda v: 5, expand=True), 1)


def test_metadata_functions_see_key_timestamp_headers():
    s = Stream().add_apply(lambda v, k, t, h: (v, k, t, h), metadata=True)
    assert run(s, 1, b"x", 5, [("h", b"1")])[0][0] == (1, b"x", 5, [("h", b"1")])


def test_transform_changes_key_and_timestamp():
    s = Stream().add_transform(lambda v, k, t, h: (v, b"new", t + 1, h))
    assert run(s, 1) == [(1, b"new", 1, None)]
    s = Stream().add_transform(lambda v, k, t, h: [(v, k, t, h), (v + 1, k, t, h)], expand=True)
    assert [r[0] for r in run(s, 1)] == [1, 2]


def test_branches_get_independent_copies():
    root = Stream()
    a = root.add_update(lambda v: v.append("a"))
    b = root.add_update(lambda v: v.append("b"))
    out = run(root, [])
    assert sorted(tuple(r[0]) for r in out) == [("a",), ("b",)]
    assert a.parent is b.parent is root


def test_leaf_filter_and_update_still_run_side_effects():
    seen = []
    Stream().add_filter(lambda v: seen.append(v) or True).compose_single()(1, None, 0, None)
    Stream().add_update(lambda v: seen.append(v * 2)).compose_single()(1, None, 0, None)
    assert seen == [1, 2]


def test_compose_restrictions_and_returning():
    s = Stream().add_filter(lambda v: True)
    with pytest.raises(ValueError, match="Filter functions are not allowed"):
        s.compose(allow_filters=False)
    r = Stream().add_apply(lambda v: v + 1).add_apply(lambda v: v * 2).compose_returning()
    assert r(1, b"k", 7, None) == (4, b"k", 7, None)
    with pytest.raises(ValueError, match="Filter functions are not allowed"):
        s.compose_returning()


def test_diff_and_root_path():
    base = Stream().add_apply(lambda v: v)
    longer = base.add_apply(lambda v: v + 1).add_apply(lambda v: v * 3)
    path = longer.root_path()  # nearest first, the root (the identity) last
    assert path[0] is longer and path[-1].is_root() and len(path) == 4
    diff = base.diff(longer)  # prunes the diff from the shared tree
    assert diff.parents == [] and len(diff.full_tree()) == 2
    assert diff.compose_returning()(1, None, 0, None) == (6, None, 0, None)
    assert base.children == []
    with pytest.raises(InvalidOperation, match="more than once"):
        base.diff(longer)


def test_diff_refusals():
    root = Stream()
    with pytest.raises(InvalidOperation, match="the same SDF"):
        root.diff(root)
    with pytest.raises(InvalidOperation, match="must originate from target SDF"):
        root.diff(Stream().add_apply(lambda v: v))
    split = root.add_apply(lambda v: v)
    split.add_apply(lambda v: v)
    with pytest.raises(InvalidOperation, match="branched SDF"):
        root.diff(split.add_apply(lambda v: v))


def test_compose_returns_an_executor_per_root():
    left, right = Stream(), Stream()
    merged = left.add_apply(lambda v: v + 1).merge(right.add_apply(lambda v: v + 2))
    out = []
    executors = merged.compose(sink=lambda v, k, t, h: out.append(v))
    assert set(executors) == {left, right}
    executors[left](1, None, 0, None)
    executors[right](1, None, 0, None)
    assert out == [2, 3]
    with pytest.raises(InvalidTopology, match="Expected a single root Stream, got 2"):
        merged.compose_single()


def test_a_linear_chain_is_fused_into_one_generated_function():
    calls = []
    s = (Stream().add_apply(lambda v: v + 1).add_filter(lambda v: v > 1).add_update(calls.append)
         .add_transform(lambda v, k, t, h: (v, k, t + 1, h)))
    out = []
    executor = s.compose_single(sink=lambda v, k, t, h: out.append((v, t)))
    assert executor.source.count("\n") == 7  # def line + 6 step lines + the sink call, one function
    executor(1, None, 0, None)
    executor(0, None, 0, None)
    assert out == [(2, 1)] and calls == [2]


def test_branch_points_and_expansions_end_a_fused_chain():
    root = Stream().add_apply(lambda v: v * 2)
    root.add_apply(lambda v: [v, v], expand=True).add_apply(lambda v: v + 1)
    root.add_filter(lambda v: False)
    out = []
    root.root().compose_single(sink=lambda v, k, t, h: out.append(v))(1, None, 0, None)
    assert out == [3, 3]


def test_a_traceback_through_a_chain_shows_the_generated_line():
    import traceback

    def explode(value):
        raise ValueError("bad reading")

    executor = Stream().add_apply(lambda v: v + 1).add_apply(explode).compose_single()
    with pytest.raises(ValueError) as info:
        executor(1, None, 0, None)
    text = "".join(traceback.format_exception(info.value))
    assert "<stream_edge generated #" in text and "apply_lambda -> apply_explode" in text
    assert "value = apply_explode_1(value)" in text  # the generated source line, from linecache


def test_get_executor_is_generated_from_the_same_operator_code():
    from stream_edge.core.stream import FilterFunction

    seen = []
    executor = FilterFunction(lambda v: v > 1).get_executor(lambda v, k, t, h: seen.append(v))
    executor(1, None, 0, None)
    executor(2, None, 0, None)
    assert seen == [2] and "if not filter_lambda_0(value):" in executor.source


def test_merge_records_both_parents_and_composes_from_either_root():
    left, right = Stream(), Stream()
    a = left.add_apply(lambda v: v + 1)
    b = right.add_apply(lambda v: v * 10)
    merged = a.merge(b)
    assert merged.parents == [a, b] and merged.parent is None and merged.is_merged()
    assert a.children == [merged] and b.children == [merged]
    out = []
    tail = merged.add_apply(lambda v: -v)
    assert tail.parent is merged and left in tail.root_path() and right in tail.root_path()
    executors = left.compose(sink=lambda v, k, t, h: out.append(v))
    executors[left](1, None, 0, None)
    executors[right](1, None, 0, None)
    assert out == [-2, -10]
    with pytest.raises(InvalidOperation, match="already present"):
        tail.merge(a)

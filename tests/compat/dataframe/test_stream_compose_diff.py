"""The stream core as on quixstreams 3.28.1: ``compose`` returns ``{root: executor}``,
``compose_single`` / ``compose_returning`` (a record tuple), ``root_path``'s order and ``diff``'s
results and refusals. The first program needs no broker; the second assigns and filters with other
dataframes through ``sdf.test()`` (Quix's ``app.topic()`` needs a broker)."""

import pytest

STREAM_PROGRAM = r'''
from quixstreams.core.stream import Stream
from quixstreams.core.stream.functions import ApplyFunction


def show(label, func):
    try:
        result = func()
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))
    else:
        print(label, "=", result)


def kinds(nodes):
    return [type(node.func).__name__ for node in nodes]


chain = Stream().add_apply(lambda v: v).add_filter(lambda v: v).add_update(lambda v: v) \
    .add_transform(lambda v, k, t, h: (v, k, t, h))
show("root_path", lambda: kinds(chain.root_path()))
show("root func", lambda: (type(Stream().func).__name__, Stream().func.func(5), len(Stream().root_path())))
show("bad func", lambda: Stream(func=lambda v: v))

# compose: one executor per root, keyed by the root node
out = []
sink = lambda v, k, t, h: out.append((v, k, t, h))
left, right = Stream(), Stream()
merged = left.add_apply(lambda v: v + 1).merge(right.add_apply(lambda v: v + 2)).add_apply(lambda v: v * 10)
executors = merged.compose(sink=sink)
print("roots", len(executors), left in executors, right in executors)
executors[left](1, "k", 5, [])
executors[right](1, "k", 6, None)
print("merged out", out)
show("compose_single merged", lambda: merged.compose_single())
single = Stream().add_apply(lambda v: v + 1)
print("single", len(single.compose()), list(single.compose())[0] is single.root_path()[-1])
out.clear()
branch = Stream().add_apply(lambda v: v + 1)
branch.add_apply(lambda v: v * 100)
branch.add_filter(lambda v: v > 10)
branch.compose_single(sink=sink)(1, b"k", 0, None)
branch.compose_single(sink=sink)(20, b"k", 0, None)
print("branches", out)

# compose_returning: a record tuple; only plain applies
returning = Stream().add_apply(lambda v: v + 1).add_apply(lambda v, k, t, h: (v, k, t), metadata=True)
show("returning", lambda: returning.compose_returning()(1, "key", 9, [("h", b"1")]))
for label, stream in [("update", Stream().add_update(lambda v: None)),
                      ("update meta", Stream().add_update(lambda v, k, t, h: None, metadata=True)),
                      ("filter", Stream().add_filter(lambda v: True)),
                      ("expand", Stream().add_apply(lambda v: [v], expand=True)),
                      ("transform", Stream().add_transform(lambda v, k, t, h: (v, k, t, h))),
                      ("transform expand", Stream().add_transform(lambda v, k, t, h: [], expand=True)),
                      ("update then filter", Stream().add_update(lambda v: None).add_filter(lambda v: v))]:
    show("returning " + label, stream.compose_returning)

def failing(value):
    if value == 1:
        raise ValueError("fail")
    return value + 1

failing_stream = Stream().add_apply(failing)
show("returning ok", lambda: failing_stream.compose_returning()(2, "k", 0, None))
show("returning fails", lambda: failing_stream.compose_returning()(1, "k", 0, None))

# diff
base = Stream().add_apply(lambda v: v)
other = base.add_apply(lambda v: v + 1).add_update(lambda v: v).add_filter(lambda v: v)
diff = base.diff(other)
print("diff", kinds(diff.full_tree()), len(diff.parents), len(base.children))
show("diff again", lambda: base.diff(other))
same = Stream()
show("diff same", lambda: same.diff(same))
show("diff foreign", lambda: Stream().diff(Stream()))
parent = Stream()
child = parent.add_apply(lambda v: v)
show("diff to parent", lambda: child.diff(parent))
root = Stream().add_apply(lambda v: v)
split = root.add_apply(lambda v: v)
split.add_apply(lambda v: v)
show("diff through a split", lambda: root.diff(split.add_apply(lambda v: v)))
moved = Stream().add_apply(lambda v: v)
target = moved.add_apply(lambda v: v).add_apply(lambda v: v)
moved = moved.add_apply(lambda v: v)
show("diff from a later node", lambda: moved.diff(target))
a, b = Stream(), Stream()
joined = a.merge(b)
show("diff through a merge", lambda: a.diff(joined.add_apply(lambda v: v)))
longer = Stream()
returned = longer.add_apply(lambda v: v + 1)
returned.add_apply(lambda v: v * 3)
show("diff with steps after it", lambda: longer.diff(returned).compose_returning()(1, "k", 0, None))
'''

DATAFRAME_PROGRAM = r'''
import uuid
from quixstreams import Application

app = Application(broker_address=BROKER, consumer_group="g-" + uuid.uuid4().hex[:6], loglevel=None)
sdf = app.dataframe(app.topic("diff-" + uuid.uuid4().hex[:6]))


def show(label, func):
    try:
        result = func()
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))
    else:
        print(label, "=", result)


sdf = sdf.apply(dict)
doubled = sdf.apply(lambda v: v["a"] * 2)
doubled.apply(lambda v: v + 1000)  # a step added after the assigned dataframe
sdf["x"] = doubled
show("assign with a later step", lambda: sdf.test({"a": 1}, key=b"k", timestamp=1))
show("assign twice", lambda: sdf.__setitem__("y", doubled))
big = sdf.apply(lambda v: v["a"] > 1)
sdf = sdf[big]
show("filter", lambda: [sdf.test({"a": a}, key=b"k", timestamp=1) for a in (1, 2)])
show("filter twice", lambda: sdf[big])
show("filter with itself", lambda: sdf[sdf])
branched = sdf.apply(lambda v: v)
branched.apply(lambda v: 1)
branched.apply(lambda v: 2)
show("assign a branched dataframe", lambda: sdf.__setitem__("z", branched.apply(lambda v: 3)))
'''


def test_stream_compose_root_path_and_diff_match_quixstreams(run_both):
    out = run_both(STREAM_PROGRAM)
    assert out.edge == out.quix
    assert "roots 2 True True" in out.edge
    assert "returning = ((2, 'key', 9), 'key', 9, [('h', b'1')])" in out.edge
    assert "diff ['ApplyFunction', 'UpdateFunction', 'FilterFunction'] 0 0" in out.edge


@pytest.mark.integration
def test_assigning_and_filtering_with_dataframes_match_quixstreams(run_both, kafka_bootstrap):
    out = run_both(f"BROKER = {kafka_bootstrap!r}\n" + DATAFRAME_PROGRAM, timeout=180)
    assert out.edge == out.quix
    assert "assign with a later step = [({'a': 1, 'x': 1002}, b'k', 1, None)]" in out.edge

"""``Stream.compose(allow_...=False)`` refusals and ``Stream.merge`` errors: the same program on
quixstreams 3.28.1 and on stream_edge, the same error types and messages."""

PROGRAM = r'''
from quixstreams.core.stream import Stream


def show(label, func):
    try:
        func()
    except Exception as exc:
        print(label, "->", type(exc).__name__, repr(str(exc)))
    else:
        print(label, "= ok")


def tree():
    root = Stream()
    root.add_update(lambda v: None).add_filter(lambda v: True).add_transform(lambda v, k, t, h: (v, k, t, h)) \
        .add_apply(lambda v: [v], expand=True)
    return root

for flag in ("allow_updates", "allow_filters", "allow_transforms", "allow_expands"):
    show(flag, lambda: tree().compose(**{flag: False}))
show("all refused", lambda: tree().compose(allow_updates=False, allow_filters=False, allow_transforms=False,
                                           allow_expands=False))
show("plain apply chain", lambda: Stream().add_apply(lambda v: v).compose(allow_updates=False, allow_filters=False,
                                                                          allow_transforms=False, allow_expands=False))
root = Stream()
a, b = root.add_apply(lambda v: v + 1), root.add_apply(lambda v: v * 2)
show("merge with itself", lambda: a.merge(a))
show("merge with an ancestor", lambda: a.add_apply(lambda v: v).merge(root))
show("merge with a descendant", lambda: root.merge(b.add_apply(lambda v: v)))
merged = a.merge(b)
print("merged parents", len(merged.parents), merged.parents[0] is a, merged.parents[1] is b)
'''


def test_stream_compose_and_merge_errors_match_quixstreams(run_both):
    out = run_both(PROGRAM)
    assert out.edge == out.quix
    assert "allow_filters -> ValueError 'Filter functions are not allowed'" in out.edge
    assert "merged parents 2 True True" in out.edge

"""Stream: a tree of stream functions, composed ahead of time into one closure.

Each :class:`Stream` node holds one function and its parents; adding a function returns a new
child node. Two children of the same node are two branches; a node made by :meth:`Stream.merge`
(``concat``, joins) has two parents and receives what both emit. :meth:`Stream.compose` walks
the tree from a root once and returns a single executor for it.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence

from .codegen import GeneratedFunction
from .exceptions import InvalidOperation
from .functions import (
    compile_steps,
    fan_out,
    ApplyFunction,
    ApplyWithMetadataFunction,
    FilterFunction,
    FilterWithMetadataFunction,
    StreamFunction,
    TransformFunction,
    UpdateFunction,
    UpdateWithMetadataFunction,
    VoidExecutor,
)

__all__ = ("Stream",)


class Stream:
    """A node of a processing tree.

    >>> s = Stream().add_apply(lambda v: v + 1).add_filter(lambda v: v > 1)
    >>> out = []
    >>> s.compose(sink=lambda v, k, t, h: out.append(v))(1, None, 0, None); out
    [2]
    """

    def __init__(self, func: Optional[StreamFunction] = None, parent: Optional["Stream"] = None,
                 parents: Sequence["Stream"] = ()) -> None:
        self.func = func
        self.parents: List[Stream] = list(parents) if parent is None else [parent, *parents]
        self.children: List[Stream] = []
        for node in self.parents:
            node.children.append(self)

    @property
    def parent(self) -> Optional["Stream"]:
        """The node's only parent (None for a root, and for a merged node: see :attr:`parents`)."""
        parents = self.parents
        return parents[0] if len(parents) == 1 else None

    def is_merged(self) -> bool:
        """True for a node with several parents (:meth:`merge`)."""
        return len(self.parents) > 1

    def merge(self, other: "Stream") -> "Stream":
        """A new node, child of this node and of ``other``: it receives what both emit."""
        if other is self:
            raise InvalidOperation("Cannot merge a SDF with itself")
        if other in self.root_path() or self in other.root_path():
            raise InvalidOperation("The target SDF is already present in the topology")
        return Stream(parents=(self, other))

    # -- building ---------------------------------------------------------------------------
    def _add(self, func: StreamFunction) -> "Stream":
        return Stream(func, parent=self)

    def add_apply(self, func: Callable[..., Any], *, expand: bool = False, metadata: bool = False) -> "Stream":
        """Add a function whose result becomes the value downstream."""
        cls = ApplyWithMetadataFunction if metadata else ApplyFunction
        return self._add(cls(func, expand=expand))

    def add_update(self, func: Callable[..., Any], *, metadata: bool = False) -> "Stream":
        """Add a function that mutates the value in place (its result is ignored)."""
        return self._add((UpdateWithMetadataFunction if metadata else UpdateFunction)(func))

    def add_filter(self, func: Callable[..., Any], *, metadata: bool = False) -> "Stream":
        """Add a predicate; false-like results drop the record."""
        return self._add((FilterWithMetadataFunction if metadata else FilterFunction)(func))

    def add_transform(self, func: Callable[..., Any], *, expand: bool = False) -> "Stream":
        """Add a function returning ``(value, key, timestamp, headers)`` (or an iterable of them)."""
        return self._add(TransformFunction(func, expand=expand))

    # -- navigation -------------------------------------------------------------------------
    def root_path(self, allow_splits: bool = True) -> List["Stream"]:
        """This node and its ancestors (every parent's of a merged node), ordered root first."""
        path: List[Stream] = []
        seen = set()
        pending: List[Stream] = [self]
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            path.append(node)
            if not allow_splits and any(len(p.children) > 1 for p in node.parents):
                continue
            pending.extend(reversed(node.parents))
        path.reverse()
        return path

    def root(self) -> "Stream":
        """The root of this node's tree (through the first parent of a merged node)."""
        node = self
        while node.parents:
            node = node.parents[0]
        return node

    def full_tree(self) -> List["Stream"]:
        """Every node connected to this one (through parents and children), parents before children."""
        nodes: List[Stream] = []
        seen = set()
        pending = [self]
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            nodes.append(node)
            pending.extend(node.parents)
            pending.extend(node.children)
        order: List[Stream] = []
        placed = set()

        def place(node: "Stream") -> None:
            if id(node) in placed:
                return
            placed.add(id(node))
            for parent in node.parents:
                place(parent)
            order.append(node)
        for node in nodes:
            place(node)
        return order

    def diff(self, other: "Stream") -> "Stream":
        """A new, parentless stream with the nodes of ``other`` after its last node shared with self.

        The diff's nodes are pruned from the shared tree (so ``sdf["col"] = sdf.apply(f)`` does not
        also run ``f`` as a branch of its own).
        """
        mine = set(map(id, self.root_path()))
        theirs = other.root_path()
        start = None
        for i, node in enumerate(theirs):
            if id(node) in mine:
                start = i
        if start is None:
            raise ValueError("the streams have no common parent")
        rest = theirs[start + 1:]
        if not rest:
            raise ValueError("the diff is empty")
        if any(len(node.children) > 1 for node in rest) or rest[-1].children:
            raise ValueError("pruning failed: the other stream has operations of its own after the diff "
                             "(branches or further steps); assign or filter with it before adding more")
        theirs[start].children.remove(rest[0])
        new = Stream()
        for node in rest:
            if node.func is not None:
                new = new._add(node.func)
        return new

    # -- composition ------------------------------------------------------------------------
    def compose(
        self,
        allow_filters: bool = True,
        allow_expands: bool = True,
        allow_updates: bool = True,
        allow_transforms: bool = True,
        sink: Optional[Callable[[Any, Any, int, Any], None]] = None,
    ) -> VoidExecutor:
        """Compose the whole tree of this stream into one executor ``(value, key, timestamp, headers)``.

        ``sink`` is called with every record that reaches a leaf of the tree.
        """
        for node in reversed(self.full_tree()):  # leaves first, as Quix Streams checks them
            func = node.func
            if func is None:
                continue
            # checked in Quix Streams' order, with its messages
            if not allow_updates and isinstance(func, (UpdateFunction, UpdateWithMetadataFunction)):
                raise ValueError("Update functions are not allowed")
            if not allow_filters and isinstance(func, (FilterFunction, FilterWithMetadataFunction)):
                raise ValueError("Filter functions are not allowed")
            if not allow_transforms and isinstance(func, TransformFunction):
                raise ValueError("Transform functions are not allowed")
            if not allow_expands and func.expand:
                raise ValueError("Expand functions are not allowed")
        executor = _build(self.root(), sink)
        if executor is None:
            return _noop
        return executor

    def compose_returning(self) -> Callable[[Any, Any, int, Any], Any]:
        """Compose this node's path (apply/transform only) into a function returning the result.

        Used by column expressions, which must produce exactly one value per input.
        """
        funcs = [n.func for n in self.root_path() if n.func is not None]
        for func in funcs:
            if func.expand or not isinstance(func, ApplyWithMetadataFunction):
                raise ValueError(f"only plain apply functions can be composed into a returning function: {func}")
        gen = GeneratedFunction(" -> ".join(f.label for f in funcs) + " (returning)")
        for func in funcs:
            gen.add(*func.code(gen.ref))
        gen.add("return value")
        return gen.compile("returning")


def _noop(value: Any, key: Any, timestamp: int, headers: Any) -> None:
    return None


def _after(node: Stream, sink: Optional[VoidExecutor]) -> Optional[VoidExecutor]:
    """The executor that receives what ``node`` emits: its children (fanned out) or the sink."""
    if node.children:
        return fan_out([c for c in (_build(c, sink) for c in node.children) if c is not None])
    if node.func is not None and node.func.internal:
        return None  # e.g. group_by's write to its repartition topic: not an output of the pipeline
    return sink


def _build(node: Stream, sink: Optional[VoidExecutor]) -> Optional[VoidExecutor]:
    """Build the executor of ``node`` and its subtree.

    A linear chain of operators (no branch) becomes ONE generated function whose body is the
    operators' lines (``StreamFunction.code``). A branch point or an expanding operator ends the
    chain by handing over to the executor(s) of what follows, built the same way, recursively.
    """
    if node.func is None:
        return _after(node, sink)
    chain: List[StreamFunction] = [node.func]
    current = node
    while (not current.func.expand and len(current.children) == 1  # type: ignore[union-attr]
           and current.children[0].func is not None):
        current = current.children[0]
        chain.append(current.func)  # type: ignore[arg-type]
    return compile_steps(chain, _after(current, sink))

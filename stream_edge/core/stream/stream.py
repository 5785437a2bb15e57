"""Stream: a tree of stream functions, composed ahead of time into one closure per root.

Each :class:`Stream` node holds one function and its parents; adding a function returns a new
child node. A root (``Stream()``) holds the identity, as in Quix Streams, which costs nothing when
composed. Two children of the same node are two branches; a node made by :meth:`Stream.merge`
(``concat``, joins) has two parents and receives what both emit. :meth:`Stream.compose` walks
the whole tree once and returns ``{root: executor}``, one executor per root.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .codegen import GeneratedFunction
from .exceptions import InvalidOperation, InvalidTopology
from .functions import (
    compile_steps,
    fan_out,
    ApplyFunction,
    ApplyWithMetadataFunction,
    AssignFunction,
    FilterFunction,
    FilterWithMetadataFunction,
    StreamFunction,
    ToTopicFunction,
    TransformFunction,
    UpdateFunction,
    UpdateWithMetadataFunction,
    VoidExecutor,
    identity,
    is_identity,
)

__all__ = ("Stream",)

Record = Tuple[Any, Any, int, Any]


class Stream:
    """A node of a processing tree.

    >>> s = Stream().add_apply(lambda v: v + 1).add_filter(lambda v: v > 1)
    >>> out = []
    >>> s.compose_single(sink=lambda v, k, t, h: out.append(v))(1, None, 0, None); out
    [2]
    """

    def __init__(self, func: Optional[StreamFunction] = None, parents: Optional[Sequence["Stream"]] = None,
                 *, parent: Optional["Stream"] = None) -> None:
        if func is not None and not isinstance(func, StreamFunction):
            raise ValueError("Provided function must be a subclass of StreamFunction")
        self.func: StreamFunction = func if func is not None else ApplyFunction(identity)
        self.parents: List[Stream] = list(parents or ()) if parent is None else [parent, *(parents or ())]
        self.children: List[Stream] = []
        self.pruned = False  # True once diff() cut this node out of its tree
        for node in self.parents:
            node.children.append(self)

    def __repr__(self) -> str:
        inner = getattr(self.func.func, "__qualname__", type(self.func.func).__name__)
        return (f"<{type(self).__name__} (parents={len(self.parents)} children={len(self.children)}): "
                f"<{type(self.func).__name__}: {inner}>>")

    @property
    def parent(self) -> Optional["Stream"]:
        """The node's only parent (None for a root, and for a merged node: see :attr:`parents`)."""
        parents = self.parents
        return parents[0] if len(parents) == 1 else None

    def is_root(self) -> bool:
        """True for a node without parents whose function is the identity (``Stream()``)."""
        return not self.parents and is_identity(self.func)

    def is_merged(self) -> bool:
        """True for a node with several parents (:meth:`merge`)."""
        return len(self.parents) > 1

    def is_branched(self) -> bool:
        """True for a node with several children (branches)."""
        return len(self.children) > 1

    def merge(self, other: "Stream") -> "Stream":
        """A new node, child of this node and of ``other``: it receives what both emit."""
        if other is self:
            raise InvalidOperation("Cannot merge a SDF with itself")
        if other in self.root_path() or self in other.root_path():
            raise InvalidOperation("The target SDF is already present in the topology")
        return Stream(parents=(self, other))

    # -- building ---------------------------------------------------------------------------
    def add_function(self, func: StreamFunction) -> "Stream":
        """A new child node running ``func``, an operator already wrapped in a :class:`StreamFunction`
        (what every ``add_*`` method builds; the dataframe adds ``ToTopicFunction`` and
        ``AssignFunction`` through it)."""
        return Stream(func, parent=self)

    def add_apply(self, func: Callable[..., Any], *, expand: bool = False, metadata: bool = False) -> "Stream":
        """Add a function whose result becomes the value downstream."""
        cls = ApplyWithMetadataFunction if metadata else ApplyFunction
        return self.add_function(cls(func, expand=expand))

    def add_update(self, func: Callable[..., Any], *, metadata: bool = False) -> "Stream":
        """Add a function that mutates the value in place (its result is ignored)."""
        return self.add_function((UpdateWithMetadataFunction if metadata else UpdateFunction)(func))

    def add_filter(self, func: Callable[..., Any], *, metadata: bool = False) -> "Stream":
        """Add a predicate; false-like results drop the record."""
        return self.add_function((FilterWithMetadataFunction if metadata else FilterFunction)(func))

    def add_transform(self, func: Callable[..., Any], *, expand: bool = False) -> "Stream":
        """Add a function returning ``(value, key, timestamp, headers)`` (or an iterable of them)."""
        return self.add_function(TransformFunction(func, expand=expand))

    # -- navigation -------------------------------------------------------------------------
    def root_path(self) -> List["Stream"]:
        """This node, then its ancestors nearest first (breadth first through every parent of a
        merged node, each node once), as Quix Streams orders them: the root comes last."""
        path: List[Stream] = [self]
        seen = {id(self)}
        i = 0
        while i < len(path):
            for parent in path[i].parents:
                if id(parent) not in seen:
                    seen.add(id(parent))
                    path.append(parent)
            i += 1
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
        """The nodes of ``other`` after this node (and any added after ``other``), cut out of the
        tree and returned as a new, parentless stream (its first node has no parent): what
        ``sdf["col"] = sdf.apply(f)`` and ``sdf[sdf.apply(f)]`` run. Raises :class:`InvalidOperation` with Quix Streams' messages when
        ``other`` does not continue this node in a straight line, or was used already.
        """
        path: List[Stream] = []  # other's nodes up to (not including) self, nearest first
        found = False
        for node in other.root_path():
            if node is self:
                found = True
                break
            # the checks Quix Streams makes, in its order
            if node.is_branched():
                raise InvalidOperation("Cannot assign or filter using a branched SDF")
            if node.is_merged():
                raise InvalidOperation("Cannot assign or filter using the SDF merged with another SDF")
            path.append(node)
        if not path:
            raise InvalidOperation("Cannot assign or filter using the same SDF")
        path.reverse()
        head = path[0]
        if head.pruned:
            raise InvalidOperation("Cannot use a filtering or column-setter SDF more than once")
        if not found:
            raise InvalidOperation(
                "filtering or column-setter SDF must originate from target SDF; "
                "ex: `sdf[sdf.apply()]`, NOT `sdf[other_sdf.apply()]` "
                "OR `sdf['x'] = sdf.apply()`, NOT `sdf['x'] = other_sdf.apply()`")
        # Cut the diff off the shared tree, so it does not also run as a branch of its own.
        head.pruned = True
        self.children.remove(head)
        head.parents = []
        return _copy_subtree(head)

    # -- composition ------------------------------------------------------------------------
    def compose(
        self,
        allow_filters: bool = True,
        allow_expands: bool = True,
        allow_updates: bool = True,
        allow_transforms: bool = True,
        sink: Optional[VoidExecutor] = None,
    ) -> Dict["Stream", VoidExecutor]:
        """Compose the whole tree of this node into executors ``(value, key, timestamp, headers)``:
        ``{root: executor}``, one per root of the tree (several after a merge of two trees).

        ``sink`` is called with every record that reaches a leaf of the tree.
        """
        tree = self.full_tree()
        _check_allowed(reversed(tree), allow_filters, allow_expands, allow_updates, allow_transforms)
        executors: Dict[Stream, VoidExecutor] = {}
        for node in tree:
            if not node.parents:
                executor = _build(node, sink)
                executors[node] = executor if executor is not None else _noop
        return executors

    def compose_single(
        self,
        allow_filters: bool = True,
        allow_expands: bool = True,
        allow_updates: bool = True,
        allow_transforms: bool = True,
        sink: Optional[VoidExecutor] = None,
    ) -> VoidExecutor:
        """:meth:`compose` for a tree with one root: its executor (:class:`InvalidTopology` otherwise)."""
        composed = self.compose(allow_filters, allow_expands, allow_updates, allow_transforms, sink)
        if len(composed) > 1:
            raise InvalidTopology(f"Expected a single root Stream, got {len(composed)}")
        return next(iter(composed.values()))

    def compose_returning(self) -> Callable[[Any, Any, int, Any], Record]:
        """Compose this stream (apply functions only) into a function returning the record
        ``(value, key, timestamp, headers)`` it produces, as Quix Streams does.

        The chain composed is the path from the root to this node; for a root (e.g. what
        :meth:`diff` returns) it is the chain from this node down to its leaf.
        """
        return self._compose_chain("return value, key, timestamp, headers", "returning")

    def compose_value(self) -> Callable[[Any, Any, int, Any], Any]:
        """Like :meth:`compose_returning`, returning only the value (column expressions, filters)."""
        return self._compose_chain("return value", "returning value")

    def _compose_chain(self, result_line: str, title: str) -> Callable[..., Any]:
        if self.parents:
            nodes = self.root_path()
            nodes.reverse()
            roots = [node for node in nodes if not node.parents]
            if len(roots) > 1:
                raise InvalidTopology(f"Expected a single root Stream, got {len(roots)}")
        else:
            nodes = [self]
            while nodes[-1].children:
                if nodes[-1].is_branched():
                    raise InvalidTopology("A returning function composes one chain; this stream branches")
                nodes.append(nodes[-1].children[0])
        _check_allowed(reversed(nodes), False, False, False, False)
        funcs = [node.func for node in nodes]
        gen = GeneratedFunction(" -> ".join(f.label for f in funcs if f.label) + f" ({title})")
        for func in funcs:
            gen.add(*func.code(gen.ref))
        gen.add(result_line)
        return gen.compile(title.replace(" ", "_"))


# Column assignment and to_topic() are update functions in Quix Streams: refused as updates.
_UPDATES = (UpdateFunction, UpdateWithMetadataFunction, AssignFunction, ToTopicFunction)


def _check_allowed(nodes: Any, allow_filters: bool, allow_expands: bool, allow_updates: bool,
                   allow_transforms: bool) -> None:
    """Refuse the operators not allowed, with Quix Streams' messages and in its order (per node:
    updates, filters, transforms, expands; the caller passes the nodes leaves first)."""
    for node in nodes:
        func = node.func
        if not allow_updates and isinstance(func, _UPDATES):
            raise ValueError("Update functions are not allowed")
        if not allow_filters and isinstance(func, (FilterFunction, FilterWithMetadataFunction)):
            raise ValueError("Filter functions are not allowed")
        if not allow_transforms and isinstance(func, TransformFunction):
            raise ValueError("Transform functions are not allowed")
        if not allow_expands and func.expand:
            raise ValueError("Expand functions are not allowed")


def _copy_subtree(node: Stream) -> Stream:
    """A parentless copy of ``node`` and everything after it (the functions are shared): the diff
    carries the steps added after ``other`` too, as Quix Streams' copy of the diff does."""
    copy = Stream(node.func)
    pending = [(node, copy)]
    while pending:
        original, copied = pending.pop()
        for child in original.children:
            child_copy = Stream(child.func, parent=copied)
            pending.append((child, child_copy))
    return copy


def _noop(value: Any, key: Any, timestamp: int, headers: Any) -> None:
    return None


def _after(node: Stream, sink: Optional[VoidExecutor]) -> Optional[VoidExecutor]:
    """The executor that receives what ``node`` emits: its children (fanned out) or the sink."""
    if node.children:
        return fan_out([c for c in (_build(c, sink) for c in node.children) if c is not None])
    if node.func.internal:
        return None  # e.g. group_by's write to its repartition topic: not an output of the pipeline
    return sink


def _build(node: Stream, sink: Optional[VoidExecutor]) -> Optional[VoidExecutor]:
    """Build the executor of ``node`` and its subtree.

    A linear chain of operators (no branch) becomes ONE generated function whose body is the
    operators' lines (``StreamFunction.code``). A branch point or an expanding operator ends the
    chain by handing over to the executor(s) of what follows, built the same way, recursively.
    """
    chain: List[StreamFunction] = [node.func]
    current = node
    while not current.func.expand and len(current.children) == 1:
        current = current.children[0]
        chain.append(current.func)
    chain = [func for func in chain if not is_identity(func)]  # roots and merge points: no lines
    if not chain:
        return _after(current, sink)  # e.g. a root that branches: straight to the branches
    return compile_steps(chain, _after(current, sink))

"""Stream functions: each operator is written ONCE, as the source lines it adds to a chain.

An executor is ``executor(value, key, timestamp, headers) -> None``. :meth:`StreamFunction.code`
returns the lines doing the operator on the locals ``value, key, timestamp, headers``; a line may
``return`` to drop the record. :class:`~stream_edge.core.stream.Stream` fuses a chain of operators
into one generated function (see ``codegen.py``); :meth:`StreamFunction.get_executor` compiles a
single operator the same way, so there is no second, hand-written implementation of any operator.

Expanding operators (``expand = True``) put an iterable in the local ``items``; the generator then
calls the downstream executor once per item, binding each item to :attr:`expand_target`.
"""

from __future__ import annotations

import abc
import pickle
from typing import Any, Callable, List, Optional, Sequence

VoidExecutor = Callable[[Any, Any, int, Any], None]
Ref = Callable[..., str]  # ref(obj, hint) -> the name ``obj`` is bound to in the generated code

__all__ = ("StreamFunction", "VoidExecutor", "Ref", "fan_out", "pickle_copier", "compile_steps")


def pickle_copier(obj: Any) -> Callable[[], Any]:
    """Return a callable creating deep copies of ``obj`` (pickle round trip, faster than deepcopy).

    >>> copy = pickle_copier({"a": [1]}); copy() == {"a": [1]}
    True
    """
    dumped = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    loads = pickle.loads
    return lambda: loads(dumped)


def fan_out(children: Sequence[VoidExecutor]) -> Optional[VoidExecutor]:
    """Combine the executors of several branches into one.

    Every branch but the last gets its own deep copy of the value, so a branch that mutates
    the value in place cannot affect its siblings.
    """
    if not children:
        return None
    if len(children) == 1:
        return children[0]
    *firsts, last = children
    loads, dumps, proto = pickle.loads, pickle.dumps, pickle.HIGHEST_PROTOCOL

    def branches(value: Any, key: Any, timestamp: int, headers: Any) -> None:
        dumped = dumps(value, proto)
        for child in firsts:
            child(loads(dumped), key, timestamp, headers)
        last(value, key, timestamp, headers)

    return branches


def _func_name(func: Any) -> str:
    return getattr(func, "__name__", type(func).__name__).replace("<lambda>", "lambda")


class StreamFunction(abc.ABC):
    """Base of all stream operators: subclasses implement :meth:`code`.

    Example (an operator adding one to the value)::

        class AddOne(StreamFunction):
            def code(self, ref):
                return ["value = value + 1"]
    """

    expand: bool = False
    expand_target: str = "value"  # what each item of ``items`` is bound to (expanding operators)
    internal: bool = False  # True: not an output of the pipeline (e.g. group_by's repartition write)

    def __init__(self, func: Optional[Callable[..., Any]] = None) -> None:
        self.func = func

    @abc.abstractmethod
    def code(self, ref: Ref) -> List[str]:
        """Source lines doing this operator (see the module docstring)."""

    @property
    def label(self) -> str:
        """A short name used in generated identifiers and titles, e.g. ``apply_to_celsius``."""
        return f"{type(self).__name__.replace('Function', '').lower()}_{_func_name(self.func)}"

    def get_executor(self, *child_executors: VoidExecutor) -> VoidExecutor:
        """A closure ``(value, key, timestamp, headers)`` doing this operator, then the children."""
        return compile_steps([self], fan_out(child_executors))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_func_name(self.func)!r})"


def emit_steps(gen: Any, steps: Sequence[StreamFunction], child: Optional[VoidExecutor]) -> None:
    """Append the lines of ``steps`` (only the last may expand) and the hand-over to ``child``."""
    for step in steps:
        gen.add(*step.code(gen.ref))
    last = steps[-1] if steps else None
    if child is None:
        return
    # a child with its own lines (run()'s output counter) is inlined instead of called
    inline = getattr(child, "inline_code", None)
    lines = inline(gen.ref) if inline is not None else [f"{gen.ref(child, 'downstream')}(value, key, timestamp, headers)"]
    if last is not None and last.expand:
        gen.add(f"for {last.expand_target} in items:", *(f"    {line}" for line in lines))
    else:
        gen.add(*lines)


def compile_steps(steps: Sequence[StreamFunction], child: Optional[VoidExecutor]) -> VoidExecutor:
    """One generated function doing ``steps`` in order, then ``child`` (if any)."""
    from stream_edge.core.stream.codegen import GeneratedFunction

    gen = GeneratedFunction(" -> ".join(s.label for s in steps if s.label) or "passthrough")
    emit_steps(gen, steps, child)
    return gen.compile()

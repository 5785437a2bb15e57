"""Generated functions: a chain of operators compiled into ONE Python function.

Every operator (apply, filter, update, column assignment, to_topic, ...) is written once, as the
source lines it contributes to a chain (``StreamFunction.code``). A linear chain of operators
becomes one function whose body is their lines, so a record costs one Python call for the whole
chain plus the user's own functions. The generated source is registered with :mod:`linecache`, so
a traceback through a pipeline shows the generated line (and the user's function below it).

Example::

    >>> gen = GeneratedFunction("demo")
    >>> double = gen.ref(lambda v: v * 2, "double")
    >>> gen.add(f"value = {double}(value)")
    >>> gen.add("return value")
    >>> gen.compile()(21, None, 0, None)
    42
"""

from __future__ import annotations

import itertools
import linecache
import re
from typing import Any, Callable, Dict, List

__all__ = ("GeneratedFunction", "SIGNATURE")

SIGNATURE = "value, key, timestamp, headers"
_serial = itertools.count(1)


def _identifier(hint: str) -> str:
    cleaned = re.sub(r"\W+", "_", hint).strip("_") or "f"
    return cleaned if not cleaned[0].isdigit() else f"f_{cleaned}"


class GeneratedFunction:
    """Collects source lines and the objects they reference, then compiles one function.

    ``ref(obj, hint)`` binds an object to a readable global name of the generated module (e.g.
    ``apply1_to_celsius``); ``add(line)`` appends a body line (indented by the caller if nested).
    """

    def __init__(self, title: str) -> None:
        self.title = title
        self.namespace: Dict[str, Any] = {}
        self.lines: List[str] = []

    def ref(self, obj: Any, hint: str = "f") -> str:
        for name, bound in self.namespace.items():
            if bound is obj:
                return name
        name = f"{_identifier(hint)}_{len(self.namespace)}"
        self.namespace[name] = obj
        return name

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def source(self, name: str = "chain", signature: str = SIGNATURE) -> str:
        body = self.lines or ["pass"]
        return f"def {name}({signature}):\n" + "".join(f"    {line}\n" for line in body)

    def compile(self, name: str = "chain", signature: str = SIGNATURE) -> Callable[..., Any]:
        """Compile and return the function; its source is kept in ``linecache`` and ``.source``,
        and this generator in ``.generated`` (its lines and names, for a caller that inlines the
        body into its own generated code: the processing loop, ``processing/inline_batch.py``)."""
        source = self.source(name, signature)
        filename = f"<stream_edge generated #{next(_serial)}: {self.title}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = dict(self.namespace)
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own generated source
        func = namespace[name]
        func.source = source  # for debugging: print(executor.source)
        func.generated = self
        return func

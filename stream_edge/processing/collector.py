"""OutputCollector: what ``run(count=..., timeout=...)`` returns, held within a bound.

``run(timeout=...)`` collects the pipeline's outputs by default (as Quix Streams does), so a run
that catches up a backlog would otherwise keep a copy of every output until it returns: about
0.3-0.7 KB of Python objects per small JSON record, the whole growth of a no-op pipeline over a
long backlog (docs/operations.md, "Memory sizing"). The collector keeps at most ``limit`` outputs
(``DEFAULT_COLLECT_LIMIT``, or ``count`` when a larger count was asked for); past it, outputs are
still processed and counted, no longer kept, and one WARNING says so and how to change it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Callable, List, Optional

from stream_edge.processing.cursor import MessageCursor
from stream_edge.processing.loop import OutputCounter

__all__ = ("OutputCollector", "CountingSink", "DEFAULT_COLLECT_LIMIT", "collect_limit_for")

logger = logging.getLogger("stream_edge")

#: Outputs ``run(timeout=...)`` returns at most unless told otherwise: a few MB of dicts, enough
#: to inspect a run's results, never the whole of a backlog.
DEFAULT_COLLECT_LIMIT = 10_000


def collect_limit_for(count: int, collect_limit: Optional[int]) -> float:
    """The number of outputs to keep: ``collect_limit`` if given (0: no limit), else the default
    or ``count`` when that is larger (``run(count=n)`` returns its n outputs).

    >>> collect_limit_for(0, None), collect_limit_for(50_000, None), collect_limit_for(5, 0)
    (10000, 50000, inf)
    """
    if collect_limit is None:
        return max(count, DEFAULT_COLLECT_LIMIT)
    if collect_limit < 0:
        raise ValueError(f"collect_limit must be >= 0 (0: no limit), got {collect_limit}")
    return collect_limit or float("inf")


class CountingSink:
    """The sink of ``run(count=n, collect=False)``: ``counter.count += 1`` per output.

    Callable like any sink; a generated chain ending in it takes its line instead of a call
    (:meth:`inline_code`, see ``stream_edge/core/stream/functions/base.py``): one call less per
    output on the hot path.

    >>> counter = OutputCounter()
    >>> sink = CountingSink(counter)
    >>> sink({"a": 1}, None, 0, None); counter.count
    1
    """

    __slots__ = ("counter",)

    def __init__(self, counter: OutputCounter) -> None:
        self.counter = counter

    def __call__(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        self.counter.count += 1

    def inline_code(self, ref: Callable[..., str]) -> List[str]:
        """The lines a generated chain runs instead of calling this sink."""
        return [f"{ref(self.counter, 'outputs')}.count += 1"]


class OutputCollector(OutputCounter):
    """Counts the outputs (``run(count=n)`` stops at ``count_limit``) and, with ``collect``,
    keeps the first ``keep`` of them as dicts (``{"_value": v}`` for a non-mapping value; with
    ``metadata``, the key, timestamp, headers, topic, partition and offset too).

    Example::

        collector = OutputCollector(ctx.cursor, count_limit=0, collect=True, metadata=False, keep=10_000)
        executors = registry.compose_all(sink=collector.sink)
    """

    def __init__(self, cursor: MessageCursor, count_limit: int, collect: bool, metadata: bool,
                 keep: float = DEFAULT_COLLECT_LIMIT) -> None:
        super().__init__(count_limit or float("inf"))
        self.items: List[dict] = []
        self._cursor, self._metadata, self._keep = cursor, metadata, keep
        self.dropped = 0  # outputs counted but not kept (past ``keep``)
        # the leaves of the pipeline call this; counting alone is inlined into their generated code
        self.sink = self._collect if collect else CountingSink(self)
        self._mark = (0, 0, 0)

    def mark(self) -> None:
        """A checkpoint starts: what :meth:`rewind` goes back to."""
        self._mark = (self.count, len(self.items), self.dropped)

    def rewind(self) -> None:
        """The checkpoint was aborted and is replayed (exactly-once): forget its outputs."""
        self.count, kept, self.dropped = self._mark
        del self.items[kept:]

    def _collect(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        self.count += 1
        if self.count > self._keep:  # every output went through here: count - 1 are kept or dropped
            if not self.dropped:
                self._warn()
            self.dropped += 1
            return
        item = dict(value) if isinstance(value, Mapping) else {"_value": value}
        if self._metadata:
            msg = self._cursor.message
            item = {"_key": key, "_timestamp": timestamp, "_headers": headers, "_topic": msg.topic(),
                    "_partition": msg.partition(), "_offset": msg.offset(), **item}
        self.items.append(item)

    def _warn(self) -> None:
        logger.warning("run(): %d outputs collected (collect_limit): later outputs are processed but not "
                       "returned; pass collect=False when the outputs are not needed, or collect_limit=N "
                       "(0: no limit; each kept output costs ~0.3-0.7 KB)", len(self.items))

"""MessageCursor: the message the per-message loop is on, and the run that owns it.

The definition-time :class:`~stream_edge.processing.context.ProcessingContext` never changes while
an application runs; what does change, once per message, is the cursor. Each context owns one
cursor for its whole life (created with it, never replaced); operators that need the current
message's partition or offset take the cursor when their chain is built and read
``cursor.message`` per message.

Who writes it (``tests/unit/runtime/test_context_ownership.py`` enforces this):

- the per-message loop (``processing/loop.py``): one attribute store per message;
- this module's :meth:`MessageCursor.visiting`, for a record run outside the loop
  (``StreamingDataFrame.test()``), which restores the previous message afterwards.

``message_context()`` and the deserializers' headers find the running application's cursor
through a :class:`contextvars.ContextVar` the Runner sets once per run (not per message), so two
applications running in two threads each see their own.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any, Iterator, Optional

__all__ = ("MessageCursor", "active_cursor", "activate", "deactivate")


class MessageCursor:
    """The raw message (``confluent_kafka.Message`` or a look-alike) being processed, or None.

    Example::

        cursor = MessageCursor()
        partition = lambda: cursor.message.partition()   # an operator reads it per message
    """

    __slots__ = ("message",)

    def __init__(self) -> None:
        self.message: Any = None

    @property
    def topic(self) -> Optional[str]:
        msg = self.message
        return None if msg is None else msg.topic()

    @property
    def partition(self) -> Optional[int]:
        msg = self.message
        return None if msg is None else msg.partition()

    @property
    def offset(self) -> Optional[int]:
        msg = self.message
        return None if msg is None else msg.offset()

    @contextmanager
    def visiting(self, message: Any) -> Iterator["MessageCursor"]:
        """The cursor on ``message`` for the block (one record run outside the loop); the
        previous message is restored after, and the cursor is the active one meanwhile."""
        previous = self.message
        self.message = message
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)
            self.message = previous


# The running application's cursor, per thread/context; set once per run by the Runner.
_ACTIVE: ContextVar[Optional[MessageCursor]] = ContextVar("stream_edge_active_cursor", default=None)


def active_cursor() -> Optional[MessageCursor]:
    """The cursor of the application running in this thread (None outside a run)."""
    return _ACTIVE.get()


def activate(cursor: Optional[MessageCursor]) -> "Token[Optional[MessageCursor]]":
    """Make ``cursor`` the active one until :func:`deactivate` gets the returned token."""
    return _ACTIVE.set(cursor)


def deactivate(token: "Token[Optional[MessageCursor]]") -> None:
    """Restore the cursor that was active before :func:`activate` returned ``token``."""
    _ACTIVE.reset(token)

"""``message_context()``: the current message's coordinates, built only when called.

The running application's :class:`~stream_edge.processing.cursor.MessageCursor` (set once per run
by the Runner, per thread) holds the raw message the loop is on; this module turns it into a
:class:`MessageContext` on demand. ``set_message_context`` keeps its replacement in a
:class:`contextvars.ContextVar` next to the message it was set for: no module global changes.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any, Optional, Tuple

from stream_edge.models.messagecontext import MessageContext
from stream_edge.processing.cursor import activate, active_cursor, deactivate

__all__ = ("message_context", "set_message_context", "MessageContext", "MessageContextNotSetError",
           "run_with_message_context")

# (the message it was set for, the MessageContext replacing it): valid while the cursor is on it
_OVERRIDE: ContextVar[Tuple[Any, Optional[MessageContext]]] = ContextVar("stream_edge_message_context_override",
                                                                        default=(None, None))


class MessageContextNotSetError(RuntimeError):
    """``message_context()`` was called outside the processing of a message (or in
    ``StreamingDataFrame.test()`` / ``StreamingSeries.test()`` without ``ctx=MessageContext(...)``)."""


_NOT_SET = "Message context is not set"  # Quix's message, which tests match on


def _current_message() -> Any:
    cursor = active_cursor()
    return None if cursor is None else cursor.message


def set_message_context(context: Optional[MessageContext]) -> None:
    """Replace the MessageContext for the current message (advanced use only)."""
    _OVERRIDE.set((_current_message(), context))


def message_context() -> MessageContext:
    """The MessageContext of the message being processed.

    Example::

        sdf = sdf.apply(lambda value: 1 if message_context().partition == 2 else 0)
    """
    msg = _current_message()
    for_message, replacement = _OVERRIDE.get()
    if replacement is not None and for_message is msg:
        return replacement
    if msg is None:
        raise MessageContextNotSetError(_NOT_SET)
    if isinstance(msg, MessageContext):
        return msg
    if getattr(msg, "is_test_message", False):  # StreamingDataFrame.test()
        if msg.context is not None:
            return msg.context
        raise MessageContextNotSetError(_NOT_SET)
    value = msg.value()
    return MessageContext(msg.topic(), msg.partition(), msg.offset(),
                          len(value) if value is not None else 0, msg.leader_epoch())


def run_with_message_context(context: Optional[MessageContext], func: Any, *args: Any) -> Any:
    """``func(*args)`` with ``message_context()`` returning ``context`` (raising if it is None),
    as ``StreamingSeries.test(..., ctx=...)`` needs; the previous binding is restored after."""
    cursor_token = activate(None)
    override_token = _OVERRIDE.set((None, context))
    try:
        return func(*args)
    finally:
        _OVERRIDE.reset(override_token)
        deactivate(cursor_token)

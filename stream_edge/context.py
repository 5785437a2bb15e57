"""``message_context()``: the current message's coordinates, built only when called.

The Application registers its ProcessingContext here when it starts; the processing loop keeps the
current raw message in it, and this module turns it into a :class:`MessageContext` on demand.
"""

from __future__ import annotations

from typing import Any, Optional

from stream_edge.models.messagecontext import MessageContext

__all__ = ("message_context", "set_message_context", "MessageContext", "MessageContextNotSetError",
           "run_with_message_context")

_processing_context: Any = None  # the ProcessingContext of the running Application
_override: tuple = (None, None)  # (message it was set for, MessageContext)


class MessageContextNotSetError(RuntimeError):
    """``message_context()`` was called outside the processing of a message (or in
    ``StreamingDataFrame.test()`` / ``StreamingSeries.test()`` without ``ctx=MessageContext(...)``)."""


_NOT_SET = "Message context is not set"  # Quix's message, which tests match on


def _bound() -> Any:
    """The processing context ``message_context()`` currently reads."""
    return _processing_context


def _bind(processing_context: Any) -> None:
    """Called by the runtime: make ``message_context()`` read this processing context."""
    global _processing_context
    _processing_context = processing_context


def set_message_context(context: Optional[MessageContext]) -> None:
    """Replace the MessageContext for the current message (advanced use only)."""
    global _override
    ctx = _processing_context
    _override = (None if ctx is None else ctx.current_message, context)


def message_context() -> MessageContext:
    """The MessageContext of the message being processed.

    Example::

        sdf = sdf.apply(lambda value: 1 if message_context().partition == 2 else 0)
    """
    ctx = _processing_context
    msg = None if ctx is None else ctx.current_message
    if _override[1] is not None and _override[0] is msg:
        return _override[1]
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
    global _processing_context, _override
    saved = _processing_context, _override
    _processing_context, _override = None, (None, context)
    try:
        return func(*args)
    finally:
        _processing_context, _override = saved

"""The common route's batch loop, generated with the topic's chain inlined in it.

The common route (one topic, a value deserializer, the key as bytes, the Kafka timestamp, no split,
no per-message callback) runs one loop per batch. Its chain of operators is already one generated
function (``stream_edge/core/stream/codegen.py``); here the chain's lines are put INTO a generated
loop over the batch, so a record costs no Python call for the chain (only for the user's own
functions). The loop does the same steps as ``BatchProcessor._plain`` (its fallback): an error
check, the replay's skip check, the cursor store, the deserializer, the chain, the
``run(count=...)`` check (no per-message counter: :func:`_position` when it stops early). A
failure goes to the same ``BatchProcessor`` methods, with the input record as deserialized (not
as the chain left it), so errors, dead letters, outages and the exactly-once replay are
unchanged. A filter's ``return`` becomes ``continue``.

A chain is inlined only when its lines allow it (:func:`inlinable_lines`): a ``return`` inside a
loop of the chain, or any other statement that means something else in a loop, keeps the call.
The loop's own locals end with ``_``, which no chain line uses (chain locals: ``value, key,
timestamp, headers, items, out_key, exc`` and ``*_item``; globals are ``<hint>_<n>``).
"""

from __future__ import annotations

import re
from typing import Any, Callable, List, NamedTuple, Optional, Sequence

from stream_edge.core.stream.codegen import GeneratedFunction

__all__ = ("inlinable_lines", "compile_batch", "LoopHooks")


class LoopHooks(NamedTuple):
    """What the generated loop works with: the ``BatchProcessor``'s state and error methods."""

    counter: Any  # ``.count`` and ``.limit`` (``run(count=...)``)
    cursor: Any  # ``.message``: the raw message being processed
    state: Any  # ``.skip`` (records a replay skips) and ``.interruption`` (set when a batch stops early)
    message_error: Callable[[Any], None]
    skipped: Callable[[Any], bool]
    deserialize_failed: Callable[..., None]
    processing_failed: Callable[..., None]
    interruption: type  # the exception that stops a batch before its message


def _position(msgs: Sequence[Any], msg: Any) -> int:
    """The index of ``msg`` (this very object) in ``msgs``: how many messages come before it.

    The loop iterates without counting (``enumerate`` costs ~10-15 ns per message) and asks
    this only when it stops early. A batch from ``consume()`` holds each message object once; a
    batch holding one object twice gets its first index, i.e. fewer messages counted processed
    (replayed, never skipped).

    >>> a, b, c = object(), object(), object()
    >>> _position([a, b, c], c)
    2
    """
    for index, item in enumerate(msgs):
        if item is msg:
            return index
    raise ValueError("the message is not in its batch")


_LOOP = re.compile(r"(for|while)\b")
_REFUSED = re.compile(r"(yield|global|nonlocal|break|continue|return\s*\S)\b")  # not meant for a loop body


def inlinable_lines(executor: Callable[..., Any]) -> Optional[List[str]]:
    """The generated chain's body with each ``return`` (drop the record) made ``continue``, or
    None when ``executor`` is not a generated chain or its lines cannot run inside a loop.

    >>> from stream_edge.core.stream import Stream
    >>> chain = Stream().add_filter(lambda v: v > 0).add_apply(lambda v: v + 1).compose_single()
    >>> inlinable_lines(chain)
    ['if not filter_lambda_0(value):', '    continue', 'value = apply_lambda_1(value)']
    """
    generated = getattr(executor, "generated", None)
    if not isinstance(generated, GeneratedFunction) or not generated.lines:
        return None
    lines: List[str] = []
    loop_indent: Optional[int] = None  # the indentation of the chain's own loop we are in
    for line in generated.lines:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if loop_indent is not None and indent <= loop_indent:
            loop_indent = None
        if _REFUSED.match(stripped):
            return None
        if stripped == "return":
            if loop_indent is not None:
                return None  # a return inside the chain's loop: continue would mean something else
            line = line[:indent] + "continue"
        elif loop_indent is None and _LOOP.match(stripped):
            loop_indent = indent
        lines.append(line)
    return lines


def compile_batch(chain_lines: Sequence[str], executor: Callable[..., Any], vloads: Callable[[bytes], Any],
                  hooks: LoopHooks, counted: bool) -> Callable[[Sequence[Any]], int]:
    """``batch(msgs) -> how many were processed``: the common-route loop with the chain's lines
    inline, on ``hooks`` (``counted``: with the ``run(count=...)`` check after each message)."""
    chain = executor.generated  # type: ignore[attr-defined]
    gen = GeneratedFunction(f"batch: {chain.title}")
    gen.namespace.update(chain.namespace)  # the chain's names (new refs get new indices)
    ref = gen.ref

    stop_at = ref(_position, "position")  # how many were processed when the loop stops early
    count_check = ([f"        if counter_.count >= limit_:  # run(count=...): stop after the n-th output",
                    f"            return {stop_at}(msgs_, msg_) + 1"] if counted else [])
    lines = [
        f"counter_ = {ref(hooks.counter, 'counter')}",
        "limit_ = counter_.limit",
        f"cursor_ = {ref(hooks.cursor, 'cursor')}",
        f"skip_ = {ref(hooks.state, 'processor')}.skip",
        "try:",
        "    for msg_ in msgs_:",
        "        if msg_.error() is not None:",
        f"            {ref(hooks.message_error, 'message_error')}(msg_)",
        "            continue",
        f"        if skip_ and {ref(hooks.skipped, 'skipped')}(msg_):",
        "            continue",
        "        cursor_.message = msg_  # the one run-time write: operators read the cursor",
        "        value = record_ = msg_.value()",
        "        if value is not None:",
        "            try:",
        f"                value = record_ = {ref(vloads, 'value_loads')}(value)",
        "            except Exception as exc:",
        f"                {ref(hooks.deserialize_failed, 'deserialize_failed')}(exc, msg_, 'value')",
        "                continue",
        "        key = msg_.key()",
        "        timestamp = msg_.timestamp()[1]",
        "        headers = msg_.headers()",
        "        try:",
        *(f"            {line}" for line in chain_lines),
        "        except Exception as exc:  # the input record, as deserialized, goes to the callbacks",
        f"            {ref(hooks.processing_failed, 'processing_failed')}(exc, record_, msg_.key(), "
        "msg_.timestamp()[1], msg_.headers(), msg_)",
        *count_check,
        f"except {ref(hooks.interruption, 'Interruption')} as stop_:  # the message is not processed: the runner rewinds to it",
        f"    {ref(hooks.state, 'processor')}.interruption = stop_",
        f"    return {stop_at}(msgs_, msg_)",
        "return len(msgs_)",
    ]
    gen.add(*lines)
    return gen.compile("batch", signature="msgs_")

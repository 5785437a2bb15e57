"""Which way a ``windows`` run computes and writes its rows: one pure choice over what the run knows.

The job gathers the facts first (the output's existence and columns, its bookmark, the window
state: catalog reads), then :func:`choose_strategy` names the strategy and why, the way dbt
declares an incremental model's strategy. No Spark here: it is tested as a table of cases.

=====================  ==========================================================================
``exact``              every key by the exact plan (the edge's order: a sort by offset), one write:
                       the output is created, replaced (other columns), or overwritten
``proven-then-patch``  a full run into the output it rewrites (fixed windows: when the last run saw
                       no late record): the proven plan (sliding: one sort by timestamp; fixed: no
                       sort) writes the groups its certificate proves, then the exact plan appends
                       the others' (only their records); one commit on ``main``
``tail-append``        an increment: the windows that close now, from the window state and the new
                       records, appended (groups that got records between old ones: their keys
                       recomputed and replaced, or a full run when windows close per partition)
``merge-keys``         an increment: every key with new records recomputed from the source and its
                       rows replaced (no usable window state, or the python-engine)
``nothing-new``        an increment with no new source snapshot: no commit
=====================  ==========================================================================

Example::

    strategy, reason = choose_strategy(RunFacts(provable=True, output="existing", full=True, sliding=True))
    # ("proven-then-patch", "--full into the existing output: the proven plan, ...")
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ("STRATEGIES", "RunFacts", "choose_strategy")

STRATEGIES = ("exact", "proven-then-patch", "tail-append", "merge-keys", "nothing-new")


@dataclass(frozen=True)
class RunFacts:
    """What a run knows before it computes anything.

    ``output``: ``missing``, ``existing`` (an Iceberg table of this definition's columns, with a
    snapshot to branch from), ``other-columns`` (a changed definition: replaced) or ``delta``.
    ``increment``: why the run cannot be an increment (None: it can; the planner's reason).
    """

    native: bool = True  # the aggregation has a native (SQL) form and the python-engine is not forced
    provable: bool = False  # a proven plan exists: native, closing per key, an offset column
    output: str = "missing"
    full: bool = False  # --full
    increment: str | None = "first run"
    new_snapshot: bool = True  # the source has a snapshot after the output's bookmark
    sliding: bool = False
    per_key: bool = True  # windows close per key (not per partition)
    has_state: bool = False  # the output's window state exists (increments of native windows)
    late_records: int | None = None  # the last full run's late records (history.late_records_of; None: unknown)


def choose_strategy(facts: RunFacts) -> tuple[str, str]:
    """The strategy of a run and why (one line, for the report and ``--explain``)."""
    increment = facts.increment
    if increment is None and not facts.native and not facts.per_key:
        increment = "the python-engine closing per partition recomputes every window"
    if facts.full or increment is not None:
        why = "--full" if facts.full else f"a full run ({increment})"
        if facts.output == "missing":
            return "exact", f"{why}: the output is created"
        if facts.output == "delta":
            return "exact", f"{why}: a Delta output is overwritten"
        if facts.output == "other-columns":
            return "exact", f"{why}: the output's columns differ from the definition's, it is replaced"
        if not facts.provable:
            cannot = ("the python-engine computes every key" if not facts.native else
                      "windows closing per partition depend on every key" if not facts.per_key else
                      "no order column outside the group to prove order with")
            return "exact", f"{why}: no proven plan ({cannot})"
        if not facts.sliding and facts.late_records != 0:  # window_recompute_bench: the fallback's scan costs more
            seen = "an unknown number of" if facts.late_records is None else f"{facts.late_records:,}"
            return "exact", f"{why}: fixed windows by the exact plan: the last run saw {seen} late records"
        saw = "" if facts.sliding else " the last run saw no record later than the grace:"
        return "proven-then-patch", (f"{why} into the existing output:{saw} the proven plan, no sort by offset "
                                     "(the keys it cannot prove by the exact plan)")
    if not facts.new_snapshot:
        return "nothing-new", "no new source snapshot since the output's bookmark"
    if not facts.native:
        return "merge-keys", "the python-engine recomputes every changed key"
    if facts.sliding and not facts.has_state:
        return "merge-keys", "no sliding window state at the bookmark: every changed key recomputed"
    return "tail-append", "the windows that close now, from the window state and the new records"

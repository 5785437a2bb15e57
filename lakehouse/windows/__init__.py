"""The ``windows`` job's package: the edge's time windows recomputed in batch on PySpark.

Imports go one way, each module importing only those above it::

    definition   options, report, fingerprint (the window spec: the edge's rule book)
    strategy     the named strategies, chosen by one pure function
    engine       python-engine plan: the edge's engines in applyInArrow
    native       native plan: Spark's DataFrame/SQL operators
    plan         input, engine choice, compute_windows, proven_windows; WindowRun, Grouping
    history      snapshot logs and bookmarks (Iceberg metadata tables)
    state        per-group window state of increments
    tail         the records an increment's tail groups need
    commit       the output transaction: write steps as data, one publish (a run branch fast-forwarded)
    incremental  the incremental planner: a write step, or a full run
    job          run_window_recompute: facts, strategy, compute, commit, report
"""

from lakehouse.windows.commit import ConcurrentRunError
from lakehouse.windows.definition import WindowRecomputeOptions, WindowReport, WindowSpec, parse_duration_ms
from lakehouse.windows.job import explain_window_recompute, run_window_recompute

__all__ = ("ConcurrentRunError", "WindowRecomputeOptions", "WindowReport", "WindowSpec", "explain_window_recompute",
           "parse_duration_ms", "run_window_recompute")

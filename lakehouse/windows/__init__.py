"""The ``windows`` job's package: the edge's time windows recomputed in batch on PySpark.

Imports go one way, each module importing only those above it::

    definition   window spec, options, report, fingerprint
    engine       python-engine plan: the edge's engines in applyInArrow
    native       native plan: Spark's DataFrame/SQL operators
    plan         input, engine choice, compute_windows; WindowRun, OutputChange
    history      snapshot logs and bookmarks (Iceberg metadata tables)
    state        per-group window state of increments
    tail         the records an increment's tail groups need
    incremental  the incremental planner: an OutputChange, or a full run
    commit       the one output commit (a run branch fast-forwarded: optimistic concurrency)
    job          run_window_recompute: plan, compute, commit, report
"""

from lakehouse.windows.commit import ConcurrentRunError
from lakehouse.windows.definition import WindowRecomputeOptions, WindowReport, WindowSpec, parse_duration_ms
from lakehouse.windows.job import run_window_recompute

__all__ = ("ConcurrentRunError", "WindowRecomputeOptions", "WindowReport", "WindowSpec", "parse_duration_ms",
           "run_window_recompute")

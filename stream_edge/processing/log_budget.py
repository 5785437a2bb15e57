"""LogBudget: at most a few lines in full per period for a repeated event, the rest counted.

A burst of bad records should not flood the screen with one WARNING each, yet nothing may go
unreported: the first ``first`` events of each ``period`` are logged in full, the others are
counted, and the count is reported in one line when the next period starts (or when the run
closes). Pure logic: the clock is a parameter, so it is tested without waiting.

Example::

    budget = LogBudget(first=2, period=60.0)
    for event in events:
        if budget.allow():
            log.warning("... %s ...", event)      # the first two of each minute
    if budget.pending:
        log.warning("%d more without a line of their own", budget.take_pending())
"""

from __future__ import annotations

import time
from typing import Callable

__all__ = ("LogBudget",)


class LogBudget:
    """Allows ``first`` full lines per ``period`` seconds and counts the events past them.

    >>> now = [0.0]
    >>> budget = LogBudget(first=2, period=10.0, clock=lambda: now[0])
    >>> [budget.allow() for _ in range(4)]
    [True, True, False, False]
    >>> budget.pending
    2
    >>> now[0] = 10.0
    >>> budget.allow(), budget.take_pending(), budget.pending
    (True, 2, 0)
    """

    def __init__(self, first: int = 5, period: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        if first < 1 or period <= 0:
            raise ValueError(f"LogBudget needs first >= 1 and period > 0; got first={first}, period={period}")
        self.first = first
        self.period = period
        self._clock = clock
        self._started = None  # type: float | None
        self._used = 0
        self.pending = 0  # events counted, not yet reported

    def allow(self) -> bool:
        """True: log this event in full; False: it was counted in ``pending``."""
        now = self._clock()
        if self._started is None or now - self._started >= self.period:
            self._started, self._used = now, 0
        if self._used < self.first:
            self._used += 1
            return True
        self.pending += 1
        return False

    def take_pending(self) -> int:
        """The events counted since the last report; the count starts again at 0."""
        pending, self.pending = self.pending, 0
        return pending

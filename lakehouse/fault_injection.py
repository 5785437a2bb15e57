"""Named pause points, so crash tests can kill a job at an exact place instead of guessing.

Set ``LAKEHOUSE_PAUSE_AT=<point>`` (e.g. ``register.before-commit``) and the job, on reaching
that point, prints ``LAKEHOUSE_PAUSED <point>`` on stderr and waits there until killed. Unset
(always, in production), :func:`pause_point` is one dictionary lookup.

Example::

    pause_point("compact.after-rewrite")
"""

from __future__ import annotations

import os
import sys
import time

ENV_VAR = "LAKEHOUSE_PAUSE_AT"


def pause_point(name: str) -> None:
    if os.environ.get(ENV_VAR) != name:
        return
    sys.stderr.write(f"LAKEHOUSE_PAUSED {name}\n")
    sys.stderr.flush()
    while True:  # the crash test SIGKILLs the process here
        time.sleep(1)

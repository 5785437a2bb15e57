"""Shared values of the connector tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from typing import Any

TS0 = 1_700_000_000_000
"""Timestamp (ms) of record 0; record i has TS0 + i."""


def record(i: int) -> dict[str, Any]:
    """The value of the i-th test record (key ``k<i>``)."""
    return {"id": i, "sensor": f"s{i % 5}", "reading": i * 0.5}


def wait_for_log(proc: Any, text: str, timeout: float = 120) -> str:
    """Wait until a background program's log contains ``text``; fails if it exits first."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        log = proc.log_path.read_text()
        if text in log:
            return log
        assert proc.poll() is None, f"the program exited ({proc.returncode}) before logging {text!r}:\n{log}"
        assert time.monotonic() < deadline, f"no {text!r} in the program's log after {timeout}s:\n{log}"
        time.sleep(0.2)


def stop_program(proc: Any) -> None:
    """Kill a background program a failed test left running (only the one this test started)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()

"""The demo's stderr filter (pipelines/demo_screen.py): the JVM's boot notice about Spark's incubator
module is dropped, from the demo and from the processes it starts; every other line, a failing
step's error and stack trace included, reaches the screen whole and in order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipelines.demo_screen import JVM_NOTICE, shown

REPO = Path(__file__).resolve().parents[2]

# A demo in miniature: a child process (as Spark's JVM, inheriting fd 2) prints the notice and a
# warning; then a step fails and its error is printed in full; then stderr is restored.
DEMO = f"""
import subprocess, sys, traceback
from pipelines.demo_screen import filtered_stderr
with filtered_stderr():
    subprocess.run(["sh", "-c", "echo '{JVM_NOTICE}' >&2; echo 'WARN a line of the child' >&2"], check=True)
    try:
        raise ValueError("the step's cause")
    except ValueError as exc:
        traceback.print_exception(exc, file=sys.stderr)
    print("[demo] FAILED: a step failed", file=sys.stderr)
print("after the demo", file=sys.stderr)
"""


def test_only_the_jvm_notice_is_left_out() -> None:
    assert not shown(JVM_NOTICE + "\n")
    assert shown("WARNING: Using incubator modules: jdk.incubator.vector, jdk.incubator.foreign\n")
    assert shown(f"ERROR {JVM_NOTICE}\n") and shown("WARN Executor: Exception in task 0.0\n")


def test_a_failing_step_still_prints_its_error_in_full() -> None:
    result = subprocess.run([sys.executable, "-c", DEMO], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert JVM_NOTICE not in lines
    assert lines[0] == "WARN a line of the child"
    assert lines[1] == "Traceback (most recent call last):" and "ValueError: the step's cause" in lines
    assert lines[-2:] == ["[demo] FAILED: a step failed", "after the demo"]

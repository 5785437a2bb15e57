"""A program under test in a subprocess, its output read by threads as it comes.

Tests that start the edge as a real process (crash, rebalance, restart tests) wait for what it
prints. A blocking ``readline`` on a program that prints nothing never returns, and a test that
hangs is worse than one that fails, so here every wait has a deadline and a failed wait says
what the program printed on stderr last.

>>> import sys
>>> program = RunningProgram([sys.executable, "-c", "print('ready'); print('processed 1')"])
>>> program.wait_for("the first message", lambda lines: "processed 1\\n" in lines, timeout=30)
>>> program.finish(30)[:2]
(0, 'ready\\nprocessed 1\\n')
"""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path
from typing import Callable, Sequence

STREAMS = ("stdout", "stderr")


class RunningProgram:
    """``args`` run as a subprocess; its stdout and stderr collected line by line.

    ``stderr_path`` sends stderr to that file instead (a long log kept for after the test);
    ``merge_stderr`` interleaves it with stdout.
    """

    def __init__(self, args: Sequence[str], name: str = "", stderr_path: Path | None = None,
                 merge_stderr: bool = False) -> None:
        self.name = name
        self._stderr_path = stderr_path
        self._log = open(stderr_path, "w") if stderr_path is not None else None
        stderr = self._log if self._log is not None else subprocess.STDOUT if merge_stderr else subprocess.PIPE
        self.proc = subprocess.Popen(list(args), stdout=subprocess.PIPE, stderr=stderr, text=True)
        self.pid = self.proc.pid
        self._lines: dict[str, list[str]] = {name: [] for name in STREAMS}
        self._closed: set[str] = set()
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(name, stream), daemon=True)
                         for name in STREAMS if (stream := getattr(self.proc, name)) is not None]
        for reader in self._readers:
            reader.start()

    def _read(self, name: str, stream) -> None:
        for line in stream:
            with self._changed:
                self._lines[name].append(line)
                self._changed.notify_all()
        with self._changed:
            self._closed.add(name)
            self._changed.notify_all()

    def lines(self, stream: str = "stdout") -> list[str]:
        """The lines printed on ``stream`` so far (with their newlines)."""
        with self._changed:
            return list(self._lines[stream])

    def stderr(self) -> str:
        """Everything printed on stderr so far (from its file when it goes to one)."""
        if self._stderr_path is not None:
            return Path(self._stderr_path).read_text()
        return "".join(self.lines("stderr"))

    def wait_for(self, what: str, done: Callable[[list[str]], bool], stream: str = "stdout",
                 timeout: float = 60) -> None:
        """Wait until ``done(lines printed on stream)`` holds; fail with the program's exit code
        and the end of its stderr when it does not within ``timeout`` s or the stream ends first."""
        with self._changed:
            self._changed.wait_for(lambda: done(self._lines[stream]) or stream in self._closed, timeout)
            if done(self._lines[stream]):
                return
        raise AssertionError(f"program {self.name or self.pid} (exit code {self.proc.poll()}) did not get to: "
                             f"{what} within {timeout} s; its stderr ends with:\n" + self.stderr()[-3000:])

    def signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` unless the program has already exited."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def finish(self, timeout: float = 60, sig: signal.Signals | None = None) -> tuple[int, str, str]:
        """Signal (optionally), wait for the exit (killed after ``timeout`` s) and the last output:
        ``(exit code, stdout, stderr)``."""
        if sig is not None:
            self.signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        for reader in self._readers:
            reader.join(10)
        if self._log is not None:
            self._log.close()
        return self.proc.returncode, "".join(self.lines("stdout")), self.stderr()

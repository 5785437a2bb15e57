"""Process-tree meter for ``bench/lake_ingest.py``: peak RSS and CPU seconds from /proc (Linux).

``Meter(pid)`` (or ``Meter([pid, ...])``: several processes of one contender, such as two edge
instances) samples the processes and all their descendants every ``interval`` seconds in a
thread: peak RSS is the largest *sum* of the tree's resident sets seen at one sample (a JVM
and its Python driver count together), and each process's own ``VmHWM`` (kernel-kept peak) is
taken as a floor for single processes. CPU seconds are user + system time of every process seen,
read at its last sample (children that exit between samples lose at most one interval).

Example::

    proc = subprocess.Popen([...])
    with Meter(proc.pid) as meter:
        proc.wait()
    print(meter.peak_rss_mb, meter.cpu_seconds)
"""

from __future__ import annotations

import os
import threading
from typing import Dict, List, Optional, Sequence, Union

_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> List[int]:
    kids: List[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                kids.extend(int(c) for c in handle.read().split())
    except OSError:
        pass
    return kids


def tree(pid: int) -> List[int]:
    """``pid`` and every descendant alive now."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(_children(current))
    return found


def _status_kb(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _cpu_seconds(pid: int) -> Optional[float]:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


class Meter:
    """Samples a process tree until stopped; see the module docstring."""

    def __init__(self, pid: Union[int, Sequence[int]], interval: float = 0.1) -> None:
        self.pids: List[int] = [pid] if isinstance(pid, int) else list(pid)
        self.interval = interval
        self.peak_rss_kb = 0
        self._cpu: Dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def pid(self) -> int:
        return self.pids[0]

    @pid.setter
    def pid(self, value: int) -> None:
        """Follow a restarted process (a killed worker's CPU seconds are kept)."""
        self.pids = [value]

    def sample(self) -> None:
        total = 0
        for pid in {p for root in self.pids for p in tree(root)}:
            rss = _status_kb(pid, "VmRSS:")
            total += rss
            self.peak_rss_kb = max(self.peak_rss_kb, _status_kb(pid, "VmHWM:"))
            cpu = _cpu_seconds(pid)
            if cpu is not None:
                self._cpu[pid] = max(cpu, self._cpu.get(pid, 0.0))
        self.peak_rss_kb = max(self.peak_rss_kb, total)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> "Meter":
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_rss_mb(self) -> float:
        return self.peak_rss_kb / 1024

    @property
    def cpu_seconds(self) -> float:
        return sum(self._cpu.values())


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its descendants so far: read before and after a
    run, the difference is what a long-running process (the broker) spent during it."""
    return sum(_cpu_seconds(p) or 0.0 for p in tree(pid))

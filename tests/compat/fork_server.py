"""Run the compat tests' short programs from an interpreter that has already imported the package.

Each ``run_both`` starts two Python programs; most of their CPU was the import of the package under
test (quixstreams: ~0.85 CPU-s, stream_edge and confluent-kafka: ~0.3 CPU-s) for a few
milliseconds of work. A :class:`ForkServer` imports the package once, then forks a child per
program: every program still runs in a process of its own (its own broker clients, state folders,
signal handlers, exit), as ``python script.py`` would run it, from a pristine copy of the imported
modules. The server holds no threads and no clients when it forks.

Protocol (one JSON line each way per program): the test sends ``{"script", "cwd", "env", "out",
"err"}``; the server forks, answers ``{"pid"}`` at once and ``{"status"}`` when the child ends
(its exit code, or minus the signal that ended it, as ``subprocess`` reports it).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

_SERVER = r"""
import importlib, json, os, runpy, sys, time, traceback
for name in sys.argv[1:]:
    importlib.import_module(name)  # what every program would import first
requests = os.fdopen(0, "r")
replies = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # a stray print of the server's goes to stderr, never into the replies
for line in requests:
    request = json.loads(line)
    sys.stdout.flush(); sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the program's process: the server's pipes closed, its own files as stdout/stderr
        requests.close(); replies.close()
        devnull = os.open(os.devnull, os.O_RDONLY)
        if devnull != 0:
            os.dup2(devnull, 0)
            os.close(devnull)
        for fd, path in ((1, request["out"]), (2, request["err"])):
            opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(opened, fd)
            os.close(opened)
        os.chdir(request["cwd"])
        os.environ.clear(); os.environ.update(request["env"])
        time.tzset()
        sys.argv = [request["script"]]
        sys.path[0] = os.path.dirname(request["script"])
        try:
            runpy.run_path(request["script"], run_name="__main__")
        except SystemExit:
            raise
        except BaseException:
            traceback.print_exc()
            sys.exit(1)
        sys.exit(0)  # the interpreter's own exit: threads joined, atexit handlers run, files flushed
    replies.write(json.dumps({"pid": pid}) + "\n"); replies.flush()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    replies.write(json.dumps({"status": code}) + "\n"); replies.flush()
"""


class ForkServer:
    """One interpreter (``python``) that imports ``modules`` once and forks a child per program::

        server = ForkServer(quix_python, ["quixstreams"], env=os.environ.copy(), flags=("-W", "ignore"))
        code, out, err = server.run(workdir / "program.py", cwd=workdir, env=env, timeout=60)
    """

    def __init__(self, python: str, modules: list[str], env: dict[str, str], flags: tuple[str, ...] = ()) -> None:
        self._proc = subprocess.Popen([python, *flags, "-c", _SERVER, *modules], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, env=env, bufsize=0)
        self._pending = b""

    def run(self, script: Path, cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str, str]:
        """Run ``script`` as ``__main__`` in a forked child; (exit code, stdout, stderr). A child that
        outlives ``timeout`` is killed and :class:`subprocess.TimeoutExpired` raised, as
        ``subprocess.run`` does."""
        out, err = script.with_suffix(".out"), script.with_suffix(".err")
        request = {"script": str(script), "cwd": str(cwd), "env": env, "out": str(out), "err": str(err)}
        assert self._proc.stdin is not None
        self._proc.stdin.write((json.dumps(request) + "\n").encode())
        pid = json.loads(self._reply(timeout=60))["pid"]
        try:
            status = json.loads(self._reply(timeout=timeout))["status"]
        except subprocess.TimeoutExpired:
            os.kill(pid, signal.SIGKILL)
            self._reply(timeout=60)  # the server reaps it and reports its end
            raise
        return status, out.read_text(), err.read_text()

    def _reply(self, timeout: float) -> str:
        """The next reply line, read from the pipe's descriptor (a buffered reader could hold a
        second line that ``select`` no longer sees)."""
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise subprocess.TimeoutExpired(self._proc.args, timeout)
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError(f"the fork server exited (code {self._proc.wait()})")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line.decode()

    def alive(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

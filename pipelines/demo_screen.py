"""The demo's screen: its stderr, and that of every process it starts, shown line by line except
one start-up notice of the JVM that nobody can act on.

Spark 4.1's launcher starts every driver JVM with ``--add-modules=jdk.incubator.vector`` (a fixed
option of ``org.apache.spark.launcher.JavaModuleOptions``, for MLlib's vectorized BLAS, which the
demo does not use), and the JVM then prints ``WARNING: Using incubator modules:
jdk.incubator.vector`` on stderr while it boots, before any log configuration applies. Neither
Spark nor the JVM has an option to leave the module out or the notice unsaid, so the demo drops
exactly that line; everything else (a failing step's error and its stack trace included) passes
unchanged.

Example::

    with filtered_stderr():
        run_the_steps()      # Spark's JVM inherits the filtered stderr
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import uuid
from typing import BinaryIO, Iterator

__all__ = ("JVM_NOTICE", "shown", "copy_shown", "filtered_stderr")

#: the line the JVM prints at boot for the incubator module Spark's launcher always adds
JVM_NOTICE = "WARNING: Using incubator modules: jdk.incubator.vector"


def shown(line: str) -> bool:
    """Whether a line of stderr reaches the screen: every line but the JVM's notice.

    >>> shown("WARNING: Using incubator modules: jdk.incubator.vector\\n")
    False
    >>> shown("WARNING: Using incubator modules: jdk.incubator.vector, jdk.incubator.foreign\\n")
    True
    >>> shown("25/12/07 07:30:00 ERROR Executor: Exception in task 0.0\\n")
    True
    """
    return line.rstrip("\r\n") != JVM_NOTICE


def copy_shown(source: BinaryIO, screen: BinaryIO, marker: bytes = b"",
               on_marker: threading.Event | None = None) -> None:
    """Copy ``source`` to ``screen`` line by line until its end, without the lines :func:`shown`
    refuses; ``marker`` (a line of its own) is not copied but sets ``on_marker``."""
    for line in iter(source.readline, b""):
        if marker and line.endswith(marker):
            screen.write(line[:-len(marker)])  # the head of a line another process had not ended
            screen.flush()
            if on_marker is not None:
                on_marker.set()
        elif shown(line.decode("utf-8", "replace")):
            screen.write(line)
            screen.flush()


@contextlib.contextmanager
def filtered_stderr() -> Iterator[None]:
    """Inside the block, this process's file descriptor 2 (which the processes it starts, Spark's
    JVM among them, inherit) is a pipe that a thread copies to the real stderr through
    :func:`shown`. On the way out, everything written until then is on the screen before fd 2 is
    restored; a JVM still running keeps its output copied while this process lives."""
    sys.stderr.flush()
    screen_fd = os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    marker = f"-- end of the demo's filtered stderr {uuid.uuid4().hex} --\n".encode()
    drained = threading.Event()
    source, screen = os.fdopen(read_fd, "rb"), os.fdopen(screen_fd, "wb")
    threading.Thread(target=copy_shown, args=(source, screen, marker, drained), name="demo-stderr",
                     daemon=True).start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.write(2, marker)  # after every line written so far: the pipe keeps the order
        drained.wait(30)
        os.dup2(screen_fd, 2)

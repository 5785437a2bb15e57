"""An edge instance for the fencing test: Application -> DataLakeSink, until SIGTERM.

    python datalake_fencing_program.py BOOTSTRAP TOPIC GROUP STORAGE_URL NAME [FREEZE_AT [POINT]]

With FREEZE_AT it stops itself (SIGSTOP, every thread: the consumer's heartbeats too) in the
middle of its FREEZE_AT-th lake commit, at POINT of the protocol (``after-stage``: data files
staged, no commit record yet; ``before-stage``: the commit log read, nothing staged yet): a flush
that stalls past the group's session timeout. It goes on when the test sends
SIGCONT. The stall uses the writer's protocol hook (``crash_hook``), a test seam of the product;
nothing in the product sleeps.
"""

from __future__ import annotations

import os
import signal
import sys

from stream_edge import Application
from stream_edge.sinks.core.datalake import DataLakeSink

SESSION_TIMEOUT_MS = 6000  # the broker's minimum: the frozen instance is evicted after 6 s


def main() -> int:
    bootstrap, topic, group, storage_url, name = sys.argv[1:6]
    freeze_at = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    freeze_point = sys.argv[7] if len(sys.argv) > 7 else "after-stage"
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      commit_every=200, commit_interval=1,
                      consumer_extra_config={"session.timeout.ms": SESSION_TIMEOUT_MS,
                                             "heartbeat.interval.ms": 500})
    sink = DataLakeSink(table_name="events", storage_url=storage_url, hive_columns=["sensor"])
    commits = {"n": 0}

    def stall(point: str) -> None:
        if point == "before-stage":
            commits["n"] += 1
        if point == freeze_point and commits["n"] == freeze_at:
            print(f"{name} FROZEN in lake commit {commits['n']}", flush=True)
            os.kill(os.getpid(), signal.SIGSTOP)
            print(f"{name} RESUMED", flush=True)

    original_setup = sink.setup

    def setup() -> None:
        original_setup()
        sink._writer.crash_hook = stall

    sink.setup = setup  # type: ignore[method-assign]
    app.dataframe(app.topic(topic)).sink(sink)
    print(f"{name} STARTED", flush=True)
    app.run()
    print(f"{name} DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

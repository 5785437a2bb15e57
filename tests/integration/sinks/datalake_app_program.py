"""A Quix-style program for the kill -9 e2e tests: Application -> QuixTSDataLakeSink.

    python datalake_app_program.py BOOTSTRAP TOPIC GROUP STORAGE_URL [CRASH_POINT CRASH_AT]

Runs until 3 s pass without a new message. With CRASH_POINT it SIGKILLs itself at that point of
the sink's commit protocol on the CRASH_AT-th lake commit.
"""

from __future__ import annotations

import os
import signal
import sys

from stream_edge import Application
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink


def main() -> int:
    bootstrap, topic, group, storage_url = sys.argv[1:5]
    crash_point = sys.argv[5] if len(sys.argv) > 5 else None
    crash_at = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      commit_every=200, commit_interval=30,
                      # The restarted program replaces its killed predecessor at once (static
                      # membership) instead of waiting out the session timeout.
                      consumer_extra_config={"group.instance.id": f"{group}-program",
                                             "session.timeout.ms": 6000})
    sink = QuixTSDataLakeSink(s3_prefix="edge", table_name="events", hive_columns=["sensor", "hour"],
                              timestamp_column="ts_ms", storage_url=storage_url)
    commits = {"n": 0}

    def hook(point: str) -> None:
        if point == "before-stage":
            commits["n"] += 1
        if point == crash_point and commits["n"] >= crash_at:
            print(f"CRASHING at {point}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    original_setup = sink.setup

    def setup() -> None:
        original_setup()
        sink._writer.crash_hook = hook

    sink.setup = setup
    app.dataframe(app.topic(topic)).sink(sink)
    app.run(timeout=3)
    print("DONE", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

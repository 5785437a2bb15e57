"""One instance of a two-instance data-lake pipeline (the rebalance silence test).

    python silence_instance_program.py BOOTSTRAP TOPIC GROUP STORAGE_URL NAME

Prints ``SILENT <NAME> <key>`` for each key its sink's tracker reports, ``ASSIGNED <NAME> ...`` on
each assignment, and runs until it gets SIGTERM.
"""

from __future__ import annotations

import sys

from stream_edge import Application
from stream_edge.processing.observer import RunObserver
from stream_edge.sinks.core.quix_ts_datalake_sink import QuixTSDataLakeSink

# Long enough that a feed stalled for a few seconds by a busy machine (parallel tests) is not silence.
SILENCE_MS = 6000


class AssignmentPrinter(RunObserver):
    def __init__(self, name: str) -> None:
        self.name = name

    def on_assign(self, partitions):
        print(f"ASSIGNED {self.name} {sorted(p for _, p in partitions)}", flush=True)


def main() -> int:
    bootstrap, topic, group, storage_url, name = sys.argv[1:6]
    app = Application(broker_address=bootstrap, consumer_group=group, auto_offset_reset="earliest",
                      commit_interval=0.5, consumer_extra_config={"session.timeout.ms": 6000})
    app.add_run_observer(AssignmentPrinter(name))

    def on_silent(key: bytes) -> None:
        print(f"SILENT {name} {key.decode()}", flush=True)

    sink = QuixTSDataLakeSink(s3_prefix="edge", table_name="events", hive_columns=[], timestamp_column="ts_ms",
                              storage_url=storage_url, stream_timeout_ms=SILENCE_MS, on_stream_timeout=on_silent)
    app.dataframe(app.topic(topic)).sink(sink)
    app.run()
    print(f"STOPPED {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

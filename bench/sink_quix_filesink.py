"""Runs inside the quixstreams==3.28.1 venv: LocalFileSink + ParquetFormat over the bench records.

    python sink_quix_filesink.py N CHECKPOINT OUT_DIR  -> prints one JSON line with the timing

quixstreams only accepts [a-zA-Z0-9 ._] in the directory, so the files go to ``data/`` below
OUT_DIR (the working directory is changed to OUT_DIR).
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
warnings.filterwarnings("ignore")

from sink_records import records  # noqa: E402


def main() -> None:
    n, checkpoint, out_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    from quixstreams.sinks.community.file.formats import ParquetFormat
    from quixstreams.sinks.community.file.local import LocalFileSink

    recs = records(n)
    os.makedirs(out_dir, exist_ok=True)
    os.chdir(out_dir)
    sink = LocalFileSink(directory="data", format=ParquetFormat(compression="snappy"))
    sink.setup()
    start = time.perf_counter()
    for begin in range(0, n, checkpoint):
        for offset in range(begin, min(n, begin + checkpoint)):
            key, value, ts = recs[offset]
            sink.add(value, key, ts, [], "bench", 0, offset)
        sink.flush()  # 3.28.1 flushes every batch at once
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed}))


if __name__ == "__main__":
    main()

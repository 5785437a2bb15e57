"""A lake volume unmounted under a running data-lake sink, on a real local disk: the sink, which
owns the partition, finds the bare mount point instead of its commit log. It must not start a
new log there at slot 0 (a second history, committing offsets the real log already holds): the
flush fails with a transient storage error that names the log, nothing is written to the bare
mount point, and once the volume is back the sink goes on from its newest slot, every record once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from stream_edge.lake.fencing import CommitLogVanishedError, check_owner
from stream_edge.sinks import SinkBackpressureError
from stream_edge.sinks.core.datalake import DataLakeSink
from stream_edge.sinks.storage_faults import TRANSIENT, classify


def feed(sink: DataLakeSink, first: int, last: int) -> None:
    for offset in range(first, last + 1):
        sink.add({"i": offset, "sensor": "ab"[offset % 2]}, None, 0, [], "t", 0, offset)


def lake_ids(root: Path) -> list[int]:
    ids: list[int] = []
    for path in root.rglob("*.parquet"):
        if not any(part.startswith(("_", ".")) for part in path.relative_to(root).parts):
            ids.extend(pq.read_table(path).column("i").to_pylist())
    return sorted(ids)


def test_an_owner_finding_no_log_entry_is_an_error_naming_the_log():
    with pytest.raises(CommitLogVanishedError) as info:
        check_owner("t", 3, None, own_epoch=2, log_dir="/mnt/lake/readings/_commits/t/3")
    assert "/mnt/lake/readings/_commits/t/3" in str(info.value) and "t[3]" in str(info.value)
    assert classify(info.value) == TRANSIENT  # retried with backoff, never a fresh log


def test_a_lake_volume_unmounted_mid_run_is_retried_and_never_gets_a_fresh_log(tmp_path):
    mount = tmp_path / "lake"  # the mount point the sink writes under
    volume = tmp_path / "volume"  # where the volume's content goes while it is unmounted
    sink = DataLakeSink(table_name="readings", storage_url=mount.as_uri(), hive_columns=["sensor"])
    sink.setup()
    feed(sink, 0, 9)
    sink.flush("t", 0)  # the sink owns t[0]: its claim and one commit are in the log
    log = mount / "readings" / "_commits" / "t" / "0"
    slots_before = sorted(p.name for p in log.glob("*.json"))
    assert len(slots_before) == 2

    mount.rename(volume)  # unmounted: the bare mount point is an empty folder
    mount.mkdir()
    feed(sink, 10, 19)
    with pytest.raises(SinkBackpressureError) as info:
        sink.flush("t", 0)
    cause = info.value.__cause__
    assert isinstance(cause, CommitLogVanishedError)
    assert "_commits/t/0" in str(cause) and "vanished" in str(cause) and "t[0]" in str(cause)
    assert list(mount.rglob("*")) == [], "nothing is written to the bare mount point"

    mount.rmdir()  # mounted again; the buffer was kept, the retry goes on from the newest slot
    volume.rename(mount)
    sink.flush("t", 0)
    slots_after = sorted(p.name for p in log.glob("*.json"))
    assert slots_after[:2] == slots_before and len(slots_after) == 3
    newest = json.loads((log / slots_after[-1]).read_text())
    assert (newest["kind"], newest["first_offset"], newest["last_offset"]) == ("commit", 10, 19)
    assert lake_ids(mount / "readings") == list(range(20))

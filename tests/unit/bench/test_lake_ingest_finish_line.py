"""bench/lake_ingest*: the one finish line (VisibleClock), the kill -9 runs' late/lost split, and the
two Kafka Connect configurations (as shipped, hardened as Apache Iceberg's own tests run it)."""

import sys
import threading
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

from lake_ingest_kill import settle  # noqa: E402
from lake_ingest_visible import VisibleClock  # noqa: E402

from infra.local.kafka_connect_service import iceberg_sink_config  # noqa: E402


class Snapshot:
    def __init__(self, rows: int) -> None:
        self.summary = {"total-records": str(rows)}


class Table:
    def __init__(self, catalog: "Catalog") -> None:
        self.catalog = catalog

    def current_snapshot(self):
        return Snapshot(self.catalog.rows) if self.catalog.rows else None


class Catalog:
    """A catalog whose one table shows ``rows`` visible rows (changed by the test)."""

    def __init__(self) -> None:
        self.rows = 0
        self.loads = 0

    def load_table(self, name: str) -> Table:
        self.loads += 1
        return Table(self)


def test_clock_stops_at_the_first_poll_that_sees_every_row():
    cat = Catalog()
    clock = VisibleClock(cat, "ns.t", target=100, interval=0.01)
    clock.start_clock()
    try:
        assert not clock.wait(0.05) and clock.seconds == 0.0  # nothing visible yet
        cat.rows = 40
        threading.Event().wait(0.05)
        assert clock.rows == 40 and clock.first_visible is not None and clock.all_visible is None
        cat.rows = 100
        assert clock.wait(5)
    finally:
        clock.stop()
    assert clock.seconds > 0 and clock.all_visible >= clock.first_visible >= clock.started
    assert [rows for _, rows in clock.history] == [40, 100]
    assert clock.figures()["snapshots"] == 2 and clock.figures()["visible"] == 100


def test_a_stalled_table_counts_later_rows_as_late_and_the_rest_as_missing():
    cat = Catalog()
    cat.rows = 60
    clock = VisibleClock(cat, "ns.t", target=100, interval=0.01)
    clock.start_clock()
    timer = threading.Timer(1.5, lambda: setattr(cat, "rows", 90))  # after the stall, before the late wait ends
    timer.start()
    try:
        result = settle(clock, restarted=clock.started, stall=0.3, late_wait=2.5)
    finally:
        timer.cancel()
        clock.stop()
    assert result["stalled"] and result["on_time"] == 60 and result["late"] == 30 and result["seconds"] == 0.0


def test_a_table_that_fills_up_is_neither_late_nor_stalled():
    cat = Catalog()
    clock = VisibleClock(cat, "ns.t", target=10, interval=0.01)
    clock.start_clock()
    cat.rows = 10
    try:
        result = settle(clock, restarted=clock.started, stall=30, late_wait=30)
    finally:
        clock.stop()
    assert not result["stalled"] and result["on_time"] == 10 and result["late"] == 0 and result["seconds"] > 0


def test_connect_as_shipped_sets_nothing_it_can_run_without():
    config = iceberg_sink_config("t", "ns.tbl", "http://cat", hardened=False)
    assert config["topics"] == "t" and config["iceberg.tables"] == "ns.tbl"
    for key in ("tasks.max", "iceberg.control.topic", "iceberg.control.commit.interval-ms",
                "consumer.override.auto.offset.reset", "iceberg.kafka.auto.offset.reset", "transforms"):
        assert key not in config


def test_connect_hardened_as_icebergs_own_tests_run_it():
    config = iceberg_sink_config("t", "ns.tbl", "http://cat", "ctl", tasks=24, hive_columns=True)
    assert config["consumer.override.auto.offset.reset"] == config["iceberg.kafka.auto.offset.reset"] == "earliest"
    assert config["iceberg.control.commit.interval-ms"] == "10000"
    assert config["iceberg.control.commit.timeout-ms"] == "30000"
    assert config["tasks.max"] == "24" and config["iceberg.control.topic"] == "ctl"
    names = config["transforms"].split(",")
    assert len(names) == 8 and {config[f"transforms.{n}.field"] for n in names if n.endswith("Fmt")} == {
        "year", "month", "day", "hour"}
    with pytest.raises(ValueError, match="control topic"):
        iceberg_sink_config("t", "ns.tbl", "http://cat")


def test_partition_values_are_checked_against_each_rows_event_time():
    import pyarrow as pa
    from lake_ingest import partitions_right
    from lake_ingest_data import BASE_MS

    ts = [BASE_MS, BASE_MS + 3_600_000 * 5 + 59_999]
    right = pa.table({"ts_ms": ts, "year": [2026, 2026], "month": [1, 1], "day": [5, 5], "hour": [0, 5]})
    assert partitions_right(right)
    wrong_hour = right.set_column(4, "hour", pa.array([0, 4]))
    assert not partitions_right(wrong_hour)

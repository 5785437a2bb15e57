"""bench/sink_readback.py: what a sink bench contender wrote is compared by value with what it was
fed; a lost, changed, retyped or duplicated record is a difference, the order is not."""

import datetime as dt
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

from sink_readback import compare, epoch_ms, fed_rows, last_per_key  # noqa: E402

CHECKPOINTS = [[(b"k0", {"id": 0, "reading": 0.0, "ok": True}, 1_700_000_000_000),
                (b"k1", {"id": 1, "reading": 0.25, "ok": False}, 1_700_000_000_001)],
               [(b"k0", {"id": 0, "reading": 0.5, "ok": False}, 1_700_000_000_002)]]


def test_equal_rows_in_any_order_are_no_difference() -> None:
    fed = fed_rows(CHECKPOINTS)
    assert fed[1] == ("k1", {"timestamp": 1_700_000_000_001, "id": 1, "reading": 0.25, "ok": False})
    assert compare(fed, list(reversed(fed))) is None


def test_a_lost_changed_retyped_or_duplicated_record_differs() -> None:
    fed = fed_rows(CHECKPOINTS, timestamps=False)
    lost = compare(fed, fed[1:])
    assert (lost.differing, lost.missing, lost.unexpected) == (1, 1, 0) and "k0" in lost.example
    changed = compare(fed, [fed[0], ("k1", {"id": 1, "reading": 0.5, "ok": False}), fed[2]])
    assert changed.differing == 1
    assert changed.example == "k1: fed {'id': 1, 'reading': 0.25, 'ok': False}, found {'id': 1, 'reading': 0.5, 'ok': False}"
    retyped = compare(fed, [fed[0], ("k1", {"id": 1, "reading": 0.25, "ok": 0}), fed[2]])
    assert retyped is not None and retyped.differing == 1  # 0 == False in Python, not here
    duplicated = compare(fed, fed + [fed[1]])
    assert (duplicated.missing, duplicated.unexpected) == (0, 1) and "2 time(s), fed 1" in duplicated.example
    assert str(duplicated).startswith("1 of 3 records differ (0 fed and not found, 1 found and not fed), e.g. k1")


def test_an_upsert_keeps_the_last_value_per_key() -> None:
    fed = fed_rows(CHECKPOINTS, timestamps=False)
    assert last_per_key(fed) == [fed[2], fed[1]]
    assert last_per_key(fed, "id") == [fed[2], fed[1]]
    assert compare(last_per_key(fed), [fed[1], fed[2]]) is None
    assert compare(last_per_key(fed), [fed[0], fed[1]]).differing == 1


def test_timestamps_read_back_as_epoch_milliseconds() -> None:
    assert epoch_ms(dt.datetime(2023, 11, 14, 22, 13, 20, 1000)) == 1_700_000_000_001
    assert epoch_ms(dt.datetime(2023, 11, 14, 22, 13, 20, 1500)) == 1_700_000_000_001.5  # not a whole ms: a float

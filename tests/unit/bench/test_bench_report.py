"""bench/results.py saves a run's figures atomically; bench/report.py renders them into a PNG."""

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import report  # noqa: E402
import results  # noqa: E402


def test_saved_figures_render_into_one_png(tmp_path):
    folder = tmp_path / "results"
    path = results.save("runtime_throughput", "apply, 1,000 messages", "msg/s",
                        [("1,000 messages", "stream_edge", 1234.56), ("1,000 messages", "quixstreams", 617.0)],
                        directory=folder)
    body = json.loads(path.read_text())
    assert body["bars"][0] == {"group": "1,000 messages", "series": "stream_edge", "value": 1234.6}
    assert not list(folder.glob("*.tmp"))
    results.save("sink_connectors", "sinks", "rec/s", [("postgres", "sink", 7.0), ("postgres", "limit", 10.0)],
                 directory=folder)
    out = tmp_path / "report.png"
    assert report.main(["--results", str(folder), "--output", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_no_figures_is_a_clear_error(tmp_path, capsys):
    assert report.main(["--results", str(tmp_path), "--output", str(tmp_path / "r.png")]) == 2
    assert "no results" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no figures"):
        results.save("x", "t", "u", [], directory=tmp_path)


def test_the_picture_holds_one_date_and_commit_and_names_what_it_left_out(tmp_path, capsys):
    import json as _json

    folder = tmp_path / "results"
    results.save("upsert_bench", "upserts, 1,000 keys", "rows/s",
                 [("1,000 keys", "edge", 10.0, 9.0, 12.0), ("1,000 keys", "pyiceberg", 4.0)], directory=folder, runs=3)
    old = folder / "runtime_throughput.json"
    old.write_text(_json.dumps({"bench": "runtime_throughput", "title": "t", "unit": "msg/s", "measured": "2020-01-01 00:00 UTC",
                                "bars": [{"group": "g", "series": "s", "value": 1.0}]}))
    kept, left_out = report.one_session(results.load_all(folder))
    assert [r["bench"] for r in kept] == ["upsert_bench"] and [r["bench"] for r in left_out] == ["runtime_throughput"]
    assert kept[0]["runs"] == 3 and kept[0]["bars"][0]["low"] == 9.0 and kept[0]["commit"]
    assert "median of 3 runs" in report.panel_title(kept[0], with_date=False)
    assert report.main(["--results", str(folder), "--output", str(tmp_path / "r.png")]) == 0
    assert "left out runtime_throughput (2020-01-01 00:00 UTC, commit not recorded)" in capsys.readouterr().err
    assert report.main(["--results", str(folder), "--output", str(tmp_path / "all.png"), "--any-date"]) == 0

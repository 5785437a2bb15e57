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

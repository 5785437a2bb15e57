"""bench/check_readme.py: every figure of bench/README.md is in a saved result; a figure typed by
hand, from another day or left stale is reported with its line."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import check_readme  # noqa: E402

RESULT = {"bench": "lake_ingest", "measured": "2026-11-28 22:03 UTC", "commit": "dc94632", "runs": 3,
          "title": "Kafka -> Iceberg, 2,000,000 readings",
          "bars": [{"group": "rows/s", "series": "edge", "value": 301325.0, "low": 290000.4, "high": 310000.0},
                   {"group": "rows/s", "series": "spark", "value": 86849.0}],
          "extra": {"cpu": {"edge": 3.04}}}


def test_the_bench_readme_quotes_only_saved_figures():
    page = check_readme.README.read_text()
    assert len(page.splitlines()) < 400, "bench/README.md is a results page read in minutes: history goes to HISTORY.md"
    problems = check_readme.check(page, check_readme.load_results())
    assert problems == [], "\n".join(problems) + "\nquote bench/results/*.json (or save the run that measured them)"


def test_figures_dates_and_commits_are_checked_against_the_sections_results():
    page = "\n".join([
        "# Benchmarks", "",
        "## lake_ingest — Kafka -> Iceberg", "",
        "Measured 2026-11-28 (commit `dc94632`), 3 runs: the edge lands 301,325 rows/s, 3.47x Spark.", "",
        "| contender | rows/s | spread | CPU s / M |", "| --- | --- | --- | --- |",
        "| edge 2M | **301,325** | 290,000 – 310,000 | 3.0 |", "",
        "```", "figures in code are commands: 999x", "```", "",
        "## tracker_cost — no results saved", "",
        "Run `./dev bench tracker_cost --sizes 10000`; its figures are not saved, so none here.",
    ])
    assert check_readme.check(page, {"lake_ingest": RESULT}) == []

    typed = page.replace("3.47x Spark", "3.9x Spark").replace("| 3.0 |", "| 2.8 |")
    typed = typed.replace("2026-11-28 (commit `dc94632`)", "2026-11-25 (commit `8202da4`)")
    typed += "\nIt used 120 MB."
    problems = check_readme.check(typed, {"lake_ingest": RESULT})
    assert any("3.9x" in p and "section 'lake_ingest'" in p for p in problems), problems
    assert any(":9: 2.8 " in p for p in problems), problems
    assert any("date 2026-11-25" in p for p in problems) and any("commit 8202da4" in p for p in problems)
    assert any("'tracker_cost' has no results file but quotes 120" in p for p in problems), problems
    assert len(problems) == 5, problems


def test_main_exits_1_naming_each_problem(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("## windows_throughput\n\n| keys | msg/s |\n| --- | --- |\n| 10k | 5 |\n")
    (tmp_path / "results").mkdir()
    assert check_readme.main(["--readme", str(readme), "--results", str(tmp_path / "results")]) == 1
    assert "README.md:5: section 'windows_throughput' has no results file but quotes 5.0" in capsys.readouterr().out


def test_a_saved_result_printed_as_the_pages_table_passes_the_check():
    table = check_readme.markdown_table(RESULT)
    assert "| edge | 301,325 (290,000 – 310,000) |" in table and "medians of 3 runs" in table
    assert check_readme.check("## lake_ingest — x\n\n" + table + "\n", {"lake_ingest": RESULT}) == []

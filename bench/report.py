"""Render the saved benchmark figures (``bench/results/*.json``) into one PNG.

    ./dev bench report [--output docs/img/bench-report.png] [--date YYYY-MM-DD] [--any-date]

The picture shows the results of one date and commit (by default the newest date that has
results; ``--date`` picks another): figures of different days and checkouts never share it, and
the results left out are named on stderr. ``--any-date`` draws every result instead, each panel
then carrying its own date and commit. One panel per benchmark, titled with what it compares and
how it was measured (date, commit, runs): grouped bars (stream_edge next to quixstreams, a sink
next to its server's bulk client, the edge next to Spark and Kafka Connect), the spread over the
runs as error bars where the result has it, and for two or three contenders measured in one
unit (not a share) the ratio of the first two above each group. Run the benchmarks first
(``./dev bench runtime_throughput`` ...): each saves its last run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import RESULTS_DIR, load_all  # noqa: E402

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "bench-report.png"


def date_of(result: dict) -> str:
    return str(result.get("measured", ""))[:10]


def one_session(results: list, date: str | None = None) -> tuple:
    """``(kept, left out)``: the results of ``date`` (default: the newest date that has results)
    and of that date's newest commit."""
    if not results:
        return [], []
    date = date or max(date_of(r) for r in results)
    on_date = sorted((r for r in results if date_of(r) == date), key=lambda r: str(r.get("measured", "")))
    commit = on_date[-1].get("commit") if on_date else None
    kept = [r for r in on_date if r.get("commit") == commit]
    return kept, [r for r in results if r not in kept]


def panel_title(result: dict, with_date: bool) -> str:
    runs = result.get("runs", 1)
    how = f"median of {runs} runs" if runs and runs > 1 else "one run"
    when = f"{result.get('measured', '?')}, commit {result.get('commit', 'not recorded')}, " if with_date else ""
    return f"{result['bench']}: {result['title']}\n({when}{how})"


def render(results: list, output: Path, with_dates: bool = False) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(10, 3.9 * len(results)), squeeze=False)
    for ax, result in zip(axes[:, 0], results):
        groups = list(dict.fromkeys(b["group"] for b in result["bars"]))
        series = list(dict.fromkeys(b["series"] for b in result["bars"]))
        bar_of = {(b["group"], b["series"]): b for b in result["bars"]}
        width = 0.8 / len(series)
        for i, name in enumerate(series):
            xs = [g + i * width for g in range(len(groups))]
            found = [bar_of.get((group, name)) for group in groups]
            ys = [b["value"] if b else 0.0 for b in found]
            spread = [[(b["value"] - b["low"]) if b and "low" in b else 0.0 for b in found],
                      [(b["high"] - b["value"]) if b and "high" in b else 0.0 for b in found]]
            has_spread = any(any(side) for side in spread)
            bars = ax.bar(xs, ys, width, label=name, yerr=spread if has_spread else None, capsize=3)
            ax.bar_label(bars, labels=[f"{y:,.1f}" if 0 < y < 100 else f"{y:,.0f}" if y else "" for y in ys],
                         fontsize=7, padding=2)
        value = {key: bar["value"] for key, bar in bar_of.items()}
        for g, group in enumerate(groups):
            if not 2 <= len(series) <= 3 or result["unit"] in ("%", "mixed"):
                continue  # a ratio of shares, or of the first two of many contenders, compares nothing
            first, second = (value.get((group, s)) for s in series[:2])
            if first and second:
                ax.annotate(f"{first / second:.2f}x", (g + 0.4 - width / 2, max(first, second)),
                            textcoords="offset points", xytext=(0, 14), ha="center", fontsize=9, weight="bold")
        # many long group names (the sinks) overlap side by side: slanted, and wrapped at their colon
        crowded = sum(len(g) for g in groups) > 90
        labels = [g.replace(": ", ":\n") if crowded else g for g in groups]
        ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], labels, fontsize=8,
                      rotation=15 if crowded else 0, ha="right" if crowded else "center")
        ax.set_ylabel(result["unit"])
        ax.set_title(panel_title(result, with_dates), fontsize=9)
        ax.margins(y=0.25)
        ax.legend(fontsize=7)
    if results and not with_dates:
        first = results[0]
        fig.suptitle(f"Measured {date_of(first)}, commit {first.get('commit', 'not recorded')}, "
                     f"{first.get('machine', '?')}", fontsize=10)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="PNG to write")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="folder of saved results")
    parser.add_argument("--date", help="draw the results of this date (YYYY-MM-DD; default: the newest)")
    parser.add_argument("--any-date", action="store_true", help="draw every result, each panel with its date")
    args = parser.parse_args(argv)
    results = load_all(args.results)
    if not results:
        print(f"bench report: no results in {args.results}; run a benchmark first (see bench/README.md)",
              file=sys.stderr)
        return 2
    kept, left_out = (results, []) if args.any_date else one_session(results, args.date)
    if not kept:
        print(f"bench report: no results of {args.date} in {args.results}", file=sys.stderr)
        return 2
    for result in left_out:
        print(f"bench report: left out {result['bench']} ({result.get('measured')}, commit "
              f"{result.get('commit', 'not recorded')}): not of this date and commit; --any-date draws it",
              file=sys.stderr)
    path = render(kept, args.output, with_dates=args.any_date)
    print(f"bench report: {len(kept)} benchmark(s) -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

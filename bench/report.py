"""Render the saved benchmark figures (``bench/results/*.json``) into one PNG.

    ./dev bench report [--output docs/img/bench-report.png]

One panel per benchmark: grouped bars (stream_edge next to quixstreams, a sink next to the limit
of the server's own bulk client), each group annotated with the ratio of its first two bars.
Run the benchmarks first (``./dev bench runtime_throughput`` ...): each saves its last run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import RESULTS_DIR, load_all  # noqa: E402

DEFAULT_OUTPUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "bench-report.png"


def render(results: list, output: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 1, figsize=(10, 3.6 * len(results)), squeeze=False)
    for ax, result in zip(axes[:, 0], results):
        groups = list(dict.fromkeys(b["group"] for b in result["bars"]))
        series = list(dict.fromkeys(b["series"] for b in result["bars"]))
        value = {(b["group"], b["series"]): b["value"] for b in result["bars"]}
        width = 0.8 / len(series)
        for i, name in enumerate(series):
            xs = [g + i * width for g in range(len(groups))]
            ys = [value.get((group, name), 0.0) for group in groups]
            bars = ax.bar(xs, ys, width, label=name)
            ax.bar_label(bars, labels=[f"{y:,.0f}" if y else "" for y in ys], fontsize=7, padding=2)
        for g, group in enumerate(groups):
            first, second = (value.get((group, s)) for s in series[:2]) if len(series) > 1 else (None, None)
            if first and second:
                ax.annotate(f"{first / second:.2f}x", (g + 0.4 - width / 2, max(first, second)),
                            textcoords="offset points", xytext=(0, 14), ha="center", fontsize=9, weight="bold")
        ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups, fontsize=8)
        ax.set_ylabel(result["unit"])
        ax.set_title(f"{result['bench']}: {result['title']} ({result['measured']}, {result['machine']})", fontsize=9)
        ax.margins(y=0.25)
        ax.legend(fontsize=8)
    fig.tight_layout()
    output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(output, dpi=110)
    plt.close(fig)
    return output


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="PNG to write")
    parser.add_argument("--results", type=Path, default=RESULTS_DIR, help="folder of saved results")
    args = parser.parse_args(argv)
    results = load_all(args.results)
    if not results:
        print(f"bench report: no results in {args.results}; run a benchmark first (see bench/README.md)",
              file=sys.stderr)
        return 2
    path = render(results, args.output)
    print(f"bench report: {len(results)} benchmark(s) -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check that every figure ``bench/README.md`` quotes is in a saved result under ``bench/results/``.

    .venv/bin/python bench/check_readme.py          # exit 1 and one line per problem
    .venv/bin/python bench/check_readme.py --table lake_ingest   # a saved result as the page's table

The README is cut into its ``## <bench>`` sections. A section's results are the files
``bench/results/<bench>.json`` and ``bench/results/<bench>_*.json`` (a bench's other modes, e.g.
``lake_ingest_scale.json``). Outside code blocks and backticks:

- every number in a table cell (but the first column, which names the row) and every measured
  figure in the prose (a number followed by ``x``, ``%``, ``MB``, ``rows/s``, ``msg/s``, ``rec/s``,
  ``records/s`` or ``CPU s``, or a number in bold) must be one of the section's saved numbers, as shown (rounded to the
  decimals the README gives; ``k``/``M`` suffixes scale), or, for ``x`` and ``%``, the ratio of two
  bars of the same group;
- every date (``YYYY-MM-DD``) must be the ``measured`` date of one of the section's results, and
  every commit named with the word ``commit`` must be one of their ``commit`` values;
- a section without results quotes no figures.

Sections before the first ``## `` heading (the page's introduction) follow the same rules against
every result. The check knows nothing of what a figure means: it catches a figure typed by hand,
copied from another day, or left behind when a bench saved a new run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Iterable, Iterator, List, Sequence, Tuple

BENCH = Path(__file__).resolve().parent
README = BENCH / "README.md"
RESULTS = BENCH / "results"

NUMBER = re.compile(r"(?<![\w.,/+-])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:\s?([kM])(?![\w]))?(?![\w.]*\d)")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
TIME = re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b")
CODE_SPAN = re.compile(r"`[^`]*`")
MEASURED = re.compile(r"(?<![\w.,/+-])((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s?(?:x\b|%|MB\b|rows/s|msg/s|rec/s|"
                      r"records/s|CPU s\b)")
BOLD = re.compile(r"\*\*((?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\*\*")  # a headline figure on its own
COMMIT = re.compile(r"\bcommits?\s+`?([0-9a-f]{7,12})\+?`?")
SCALE = {"k": 1e3, "M": 1e6, None: 1.0}


def numbers_in(value: object) -> Iterator[float]:
    """Every number in a saved result: its numeric values and the numbers written in its strings."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield float(value)
    elif isinstance(value, str):
        text = DATE.sub(" ", value)
        for whole, frac, suffix in NUMBER.findall(text):
            yield float(whole.replace(",", "") + (f".{frac}" if frac else "")) * SCALE[suffix or None]
    elif isinstance(value, dict):
        for item in value.values():
            yield from numbers_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from numbers_in(item)


def ratios_in(result: dict) -> Iterator[float]:
    """``a / b`` of every two bars of the same group (a ratio or a share the README may quote)."""
    groups: dict = {}
    for bar in result.get("bars", []):
        groups.setdefault(bar["group"], []).append(bar["value"])
    for values in groups.values():
        for a in values:
            for b in values:
                if b:
                    yield a / b


def matches(token: str, decimals: int, pool: Sequence[float], ratios: Sequence[float], unit: str) -> bool:
    """Whether a figure as shown (``token``, ``decimals`` after the point) is one of ``pool``."""
    wanted = float(token)
    half = 0.5 * 10 ** -decimals + 1e-9  # shown rounded either way at an exact half (411692.5 -> 411,693)
    if any(abs(round(v, decimals) - wanted) < 1e-9 or abs(v - wanted) <= half for v in pool):
        return True
    if unit in ("x", "%"):
        scale = 100.0 if unit == "%" else 1.0
        return any(abs(round(r * scale, decimals) - wanted) < 1e-9 for r in ratios)
    return False


def figures(line: str, table: bool) -> Iterator[Tuple[str, int, str]]:
    """``(value, decimals, unit)`` of the figures a README line quotes (dates and times removed)."""
    text = TIME.sub(" ", DATE.sub(" ", CODE_SPAN.sub(" ", line)))
    if table:
        cells = [c for c in text.strip().strip("|").split("|")][1:]
        text = " | ".join(cells)
        for match in NUMBER.finditer(text):
            whole, frac, suffix = match.groups()
            after = text[match.end():match.end() + 1]
            unit = "%" if after == "%" else "x" if after == "x" else ""
            value = float(whole.replace(",", "") + (f".{frac}" if frac else "")) * SCALE[suffix]
            yield repr(value), len(frac or "") if not suffix else 0, unit
        return
    for match in [*MEASURED.finditer(text), *BOLD.finditer(text)]:
        token = match.group(1).replace(",", "")
        unit = "%" if match.group(0).endswith("%") else "x" if match.group(0).endswith("x") else ""
        yield token, len(token.split(".")[1]) if "." in token else 0, unit


def sections(text: str) -> Iterator[Tuple[str, List[Tuple[int, str]]]]:
    """``(bench name, [(line number, line)])`` per ``## `` section, fenced code left out; the
    introduction's name is ``""``."""
    name, fenced = "", False
    lines: List[Tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("## "):
            yield name, lines
            heading = line[3:].strip().strip("`")
            name, lines = re.split(r"[\s`]", heading, maxsplit=1)[0], []
            continue
        lines.append((number, line))
    yield name, lines


def load_results(folder: Path = RESULTS) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}


def section_results(name: str, results: dict) -> List[dict]:
    if not name:
        return list(results.values())
    return [r for stem, r in results.items() if stem == name or stem.startswith(name + "_")]


def check(text: str, results: dict) -> List[str]:
    """One line per figure, date or commit of ``text`` that no saved result backs."""
    problems: List[str] = []
    for name, lines in sections(text):
        mine = section_results(name, results)
        pool = sorted(set(numbers_in(mine)))
        ratios = sorted(set(r for result in mine for r in ratios_in(result)))
        dates = {str(r.get("measured", ""))[:10] for r in mine}
        commits = {str(r.get("commit", "")).rstrip("+") for r in mine}
        where = f"section '{name}'" if name else "introduction"
        for number, line in lines:
            table = line.lstrip().startswith("|")
            if table and re.fullmatch(r"\s*\|[\s|:-]+\|?\s*", line):
                continue  # a table's separator row
            for token, decimals, unit in figures(line, table):
                if not mine:
                    problems.append(f"README.md:{number}: {where} has no results file but quotes {token}{unit}")
                elif not matches(token, decimals, pool, ratios, unit):
                    problems.append(f"README.md:{number}: {token}{unit} ({where}) is in no saved result "
                                    f"({', '.join(r['bench'] + '.json' for r in mine)})")
            for date in DATE.findall(CODE_SPAN.sub(" ", line)):
                if date not in dates:
                    problems.append(f"README.md:{number}: date {date} ({where}) is not the date of a saved result")
            for commit in COMMIT.findall(line):
                if not any(c.startswith(commit) or commit.startswith(c) for c in commits if c):
                    problems.append(f"README.md:{number}: commit {commit} ({where}) is not that of a saved result")
    return problems


def fmt(value: float) -> str:
    """A figure as the page shows it: thousands separated, one decimal below 1,000.

    >>> fmt(301325.04), fmt(3.04), fmt(1939.8)
    ('301,325', '3.0', '1,940')
    """
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.1f}"


def markdown_table(result: dict) -> str:
    """A result as the page's table (rows: series; columns: groups; a spread as ``median (low – high)``)
    under its caption: what to paste into the README after a bench saved a new run."""
    groups = list(dict.fromkeys(b["group"] for b in result["bars"]))
    series = list(dict.fromkeys(b["series"] for b in result["bars"]))
    cell = {}
    for bar in result["bars"]:
        text = fmt(bar["value"])
        if "low" in bar:
            text += f" ({fmt(bar['low'])} – {fmt(bar['high'])})"
        cell[(bar["group"], bar["series"])] = text
    runs = result.get("runs", 1)
    lines = [f"`bench/results/{result['bench']}.json`, {str(result.get('measured', '?'))[:10]}, commit "
             f"`{str(result.get('commit', '?')).rstrip('+')}`, " + (f"medians of {runs} runs (low – high)" if runs > 1
                                                                   else "one run"), "",
             "| " + " | ".join(["", *groups]) + " |", "|" + " --- |" * (len(groups) + 1)]
    lines += ["| " + " | ".join([name, *(cell.get((g, name), "-") for g in groups)]) + " |" for name in series]
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path, default=README)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--table", metavar="BENCH", help="print BENCH's saved result as the page's table and exit")
    args = parser.parse_args(list(argv) if argv is not None else None)
    if args.table:
        print(markdown_table(load_results(args.results)[args.table]))
        return 0
    problems = check(args.readme.read_text(), load_results(args.results))
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} figure(s) of {args.readme} not backed by {args.results}/*.json: quote the saved "
              f"results (or save the run that measured them)", file=sys.stderr)
        return 1
    print(f"{args.readme}: every figure, date and commit is in {args.results}/*.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The docs name only files that exist and bench options that the benchmarks accept."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH_IN_BACKTICKS = re.compile(r"`((?:stream_edge|lakehouse|pipelines|infra|tests|bench|docs|\.ci)/[A-Za-z0-9_./\-]*)`")


def _markdown_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    return [ROOT / n for n in names]


def test_every_path_named_in_the_docs_exists():
    missing = []
    for doc in _markdown_files():
        for match in PATH_IN_BACKTICKS.finditer(doc.read_text()):
            path = match.group(1).rstrip("/")
            if any(mark in path for mark in ("*", "<", "NAME")):
                continue  # placeholders
            if not (ROOT / path).exists():
                missing.append(f"{doc.relative_to(ROOT)} -> {path}")
    assert not missing, "docs name files that are not in the repository:\n" + "\n".join(missing)


def test_every_bench_option_in_the_bench_readme_exists():
    readme = (ROOT / "bench" / "README.md").read_text()
    accepted = set()
    for script in (ROOT / "bench").glob("*.py"):
        accepted.update(re.findall(r'add_argument\(\s*"(--[a-z][a-z0-9-]*)"', script.read_text()))
    used = set(re.findall(r"\./dev bench \w+ [^\n`]*", readme))
    options = {opt for line in used for opt in re.findall(r"(--[a-z][a-z0-9-]*)", line)}
    assert options and not options - accepted, f"bench/README.md shows unknown options: {options - accepted}"

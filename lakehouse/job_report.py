"""What every job prints: progress lines while it works, one summary line when it is done.

Progress goes to the ``lakehouse`` logger (stderr); the summary line goes to stdout so a
scheduler can keep it. Secrets never reach either: :func:`redact` masks every secret value the
process knows (catalog token/credential, S3 keys) in any text we print, error messages included.

Example::

    report = JobReport("register", "lake.db.t", "iceberg")
    report.before(files=3, rows=30, size=1024)
    ...
    report.after(files=5, rows=50, size=2048)
    print(report.summary_line())
    # register lake.db.t (iceberg): files 3 -> 5, rows 30 -> 50, bytes 1.0 KiB -> 2.0 KiB, ... in 1.2s
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

log = logging.getLogger("lakehouse")

SECRET_ENV_VARS = ("ICEBERG_TOKEN", "ICEBERG_CREDENTIAL", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID",
                   "AWS_SESSION_TOKEN")


def redact(text: str, secrets: list[str] | None = None) -> str:
    """Replace every known secret value in ``text`` with ``***``."""
    values = list(secrets or [])
    values += [os.environ[k] for k in SECRET_ENV_VARS if os.environ.get(k)]
    for value in sorted(set(values), key=len, reverse=True):
        if value and len(value) >= 4:
            text = text.replace(value, "***")
            # OAuth2 credentials are client_id:secret: mask the secret half on its own too.
            if ":" in value:
                secret_half = value.split(":", 1)[1]
                if len(secret_half) >= 4:
                    text = text.replace(secret_half, "***")
    return text


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class Progress:
    """Logs ``done/total`` for long work, at most every ``every_s`` seconds (and at the end)."""

    def __init__(self, what: str, every_s: float = 5.0) -> None:
        self.what = what
        self.every_s = every_s
        self._last = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done >= total or now - self._last >= self.every_s:
            self._last = now
            pct = 100.0 * done / total if total else 100.0
            log.info("%s: %d/%d (%.0f%%)", self.what, done, total, pct)


@dataclass
class JobReport:
    """Figures of one job run; ``summary_line()`` is the one line every job prints."""

    job: str
    table: str
    table_format: str
    files_before: int = 0
    files_after: int = 0
    rows_before: int = 0
    rows_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    extra: dict[str, object] = field(default_factory=dict)
    problem: str | None = None  # the run did its work but something needs a person: exit code 1
    started: float = field(default_factory=time.monotonic)
    duration_s: float = 0.0

    def before(self, files: int, rows: int, size: int) -> None:
        self.files_before, self.rows_before, self.bytes_before = files, rows, size

    def after(self, files: int, rows: int, size: int) -> None:
        self.files_after, self.rows_after, self.bytes_after = files, rows, size
        self.duration_s = time.monotonic() - self.started

    def summary_line(self) -> str:
        extra = "".join(f", {k} {v}" for k, v in self.extra.items())
        return redact(
            f"{self.job} {self.table} ({self.table_format}): files {self.files_before} -> {self.files_after}, "
            f"rows {self.rows_before} -> {self.rows_after}, "
            f"bytes {human_bytes(self.bytes_before)} -> {human_bytes(self.bytes_after)}{extra}, "
            f"in {self.duration_s:.1f}s"
        )

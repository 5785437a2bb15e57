"""``StreamingDataFrame.print_table``: the most recent records as a table (Quix Streams 3.28).

Tables are drawn with `rich` (``pip install rich``), imported on first use only. Two modes:

- non-interactive (stdout is not a terminal, or ``live=False``): a table collects records until it
  holds ``size`` of them, or ``timeout`` seconds passed since its first one (checked when a record
  arrives), then prints them and starts again;
- interactive (a terminal and ``live=True``): the table of the last ``size`` records is redrawn in
  place, at most every ``live_slowdown`` seconds.

Columns: ``_key`` and ``_timestamp`` (with ``metadata=True``), then every field seen so far by this
table, in the order they first appeared (a value that is not a dict is shown under the column
``0``), or ``columns`` as given; a missing field is an empty cell. Cells are ``str()`` of the
values, cut with an ellipsis when the table is wider than the console (the widest columns first).

Example::

    sdf.print_table(size=10, title="Orders", columns=["id", "amount"], column_widths={"id": 8})
"""

from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any, Deque, Dict, List, Optional

__all__ = ("TablePrinter",)


def _rich() -> Any:
    try:
        import rich.console
        import rich.table
    except ImportError as exc:  # pragma: no cover - rich is installed with the dev and edge environments
        raise ImportError("print_table() draws its tables with rich: pip install rich") from exc
    return rich


class TablePrinter:
    """The state of one ``print_table`` call: its buffered rows and how it prints them."""

    def __init__(self, size: int = 5, title: Optional[str] = None, metadata: bool = True, timeout: float = 5.0,
                 live: bool = True, live_slowdown: float = 0.5, columns: Optional[List[str]] = None,
                 column_widths: Optional[Dict[str, int]] = None) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"print_table() size must be a positive int, got {size!r}")
        if columns is not None and not all(isinstance(c, str) for c in columns):
            raise TypeError(f"print_table() columns must be strings, got {columns!r}")
        self.size = size
        self.title = title
        self.metadata = metadata
        self.timeout = timeout
        self.live = live
        self.live_slowdown = live_slowdown
        self.columns = None if columns is None else list(columns)
        self.column_widths = dict(column_widths or {})
        self._rows: Deque[Dict[str, Any]] = deque(maxlen=size)
        self._seen: Dict[str, None] = {}  # every column seen so far, in order of appearance
        self._first_at = 0.0
        self._live_view: Any = None
        self._last_draw = 0.0
        _rich()  # fail at definition time when rich is missing

    # -- per record ---------------------------------------------------------------------------
    def __call__(self, value: Any, key: Any, timestamp: int, headers: Any) -> None:
        row: Dict[str, Any] = {"_key": key, "_timestamp": timestamp} if self.metadata else {}
        if isinstance(value, dict):
            row.update(value)
        else:
            row["0"] = value
        if self.live and sys.stdout.isatty():
            self._rows.append(row)
            self._draw_live()
            return
        if not self._rows:
            self._first_at = time.monotonic()
        self._rows.append(row)
        if len(self._rows) >= self.size or time.monotonic() - self._first_at >= self.timeout:
            self._print(list(self._rows))
            self._rows.clear()

    # -- drawing ------------------------------------------------------------------------------
    def _column_names(self, rows: List[Dict[str, Any]]) -> List[str]:
        if self.columns is not None:
            return (["_key", "_timestamp"] if self.metadata else []) + self.columns
        for row in rows:
            for name in row:
                self._seen.setdefault(str(name), None)
        return list(self._seen)

    def _table(self, rows: List[Dict[str, Any]]) -> Any:
        rich = _rich()
        table = rich.table.Table(title=self.title, title_justify="left")
        names = self._column_names(rows)
        for name in names:
            table.add_column(name, width=self.column_widths.get(name), overflow="ellipsis")
        for row in rows:
            cells = {str(k): v for k, v in row.items()}
            table.add_row(*("" if name not in cells else str(cells[name]) for name in names))
        return table

    def _print(self, rows: List[Dict[str, Any]]) -> None:
        console = _rich().console.Console(file=sys.stdout)
        console.print(self._table(rows))

    def _draw_live(self) -> None:
        now = time.monotonic()
        if self._live_view is None:
            from rich.live import Live

            self._live_view = Live(self._table(list(self._rows)), auto_refresh=False)
            self._live_view.start()
        elif now - self._last_draw < self.live_slowdown:
            return
        self._live_view.update(self._table(list(self._rows)), refresh=True)
        self._last_draw = now

"""The JSON codec used by default (orjson): ``dumps`` returns bytes, ``loads`` accepts bytes or str.

>>> loads(dumps({"a": 1}))
{'a': 1}
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ("dumps", "loads")


def dumps(value: Any) -> bytes:
    """Serialize to compact JSON bytes."""
    return orjson.dumps(value)


loads = orjson.loads

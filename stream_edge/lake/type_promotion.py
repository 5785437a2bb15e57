"""Which column types a reader can read as a wider one without loss (Iceberg's and Delta's type
promotion rules that the lake's schema evolution follows): the one rule used for top-level
columns (``schema_plan``) and fields inside structs (``struct_merge``).

>>> promotion("int", "bigint"), promotion("bigint", "int"), promotion("decimal(9,2)", "decimal(18,2)")
(True, False, True)
"""

from __future__ import annotations

import re

__all__ = ("promotion",)

_DECIMAL = re.compile(r"decimal\((\d+),(\d+)\)")
_INT_RANK = {"tinyint": 1, "smallint": 2, "int": 3, "bigint": 4}


def promotion(narrow: str, wide: str) -> bool:
    """True if a reader can read a ``narrow`` column as ``wide`` without loss."""
    if narrow == wide:
        return True
    if narrow in _INT_RANK and wide in _INT_RANK:
        return _INT_RANK[narrow] < _INT_RANK[wide]
    if (narrow, wide) == ("float", "double"):
        return True
    a, b = _DECIMAL.fullmatch(narrow), _DECIMAL.fullmatch(wide)
    if a and b:
        return a.group(2) == b.group(2) and int(a.group(1)) <= int(b.group(1))
    return False

"""The Arrow memory pool of an edge process: the system allocator unless the user chose one.

pyarrow's default pool (mimalloc in the wheels) keeps the pages of freed buffers for reuse. A
table sink allocates in bursts (a partition's records converted to Arrow, Parquet files encoded
from them, then all freed), so those kept pages are much of what the sink adds to the process's
RSS beyond its bounded buffers: landing 2M JSON readings over 24 partitions into the data-lake
sink, the process peaked ~33 MB lower with the system allocator (glibc returns large freed blocks
to the OS), at the same CPU (bench/README.md, lake_ingest).

pyarrow picks its C++ default pool once, when it is imported, from ``ARROW_DEFAULT_MEMORY_POOL``
(pyarrow's own variable); the Parquet writer and the compute kernels allocate from that pool. So:

* :func:`prefer_system_allocator` runs when ``stream_edge.sinks`` is imported (every edge process
  imports it, Spark workers importing ``stream_edge.lake`` do not): if pyarrow is not imported yet
  and the variable is unset, it sets ``ARROW_DEFAULT_MEMORY_POOL=system`` in the process's
  environment (children inherit it);
* :func:`use_edge_memory_pool` runs when a table sink starts (``DataLakeSink``, ``IcebergSink``):
  if pyarrow was imported before ``stream_edge`` with the variable unset, it makes the system
  allocator pyarrow's Python-side default (the records' conversion to Arrow) and says once that
  the C++ side keeps pyarrow's default unless the variable is set before pyarrow is imported.

A variable you set always wins: ``ARROW_DEFAULT_MEMORY_POOL=mimalloc`` keeps pyarrow's default.
The pool is process-wide: Arrow code in the pipeline's own functions uses it too.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ("POOL_ENV", "prefer_system_allocator", "use_edge_memory_pool")

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"

logger = logging.getLogger(__name__)

_state = {"set_by_edge": False, "told": False}


def prefer_system_allocator() -> bool:
    """Set ``ARROW_DEFAULT_MEMORY_POOL=system`` unless it is set or pyarrow is imported already
    (pyarrow reads it once, at its import); True when it was set here."""
    if POOL_ENV in os.environ or "pyarrow" in sys.modules:
        return False
    os.environ[POOL_ENV] = "system"
    _state["set_by_edge"] = True
    return True


def use_edge_memory_pool() -> str:
    """Make sure the table sinks allocate from the system allocator unless the user chose a pool;
    returns the backend of pyarrow's (Python-side) default pool now in use. Buffers allocated
    before keep their own pool (each Arrow buffer frees itself into the pool it came from), so
    switching at any time is safe."""
    import pyarrow as pa

    pool = pa.default_memory_pool()
    if os.environ.get(POOL_ENV) and not _state["set_by_edge"]:
        return str(pool.backend_name)  # the user's choice
    if pool.backend_name == "system":
        return "system"
    pa.set_memory_pool(pa.system_memory_pool())
    if not _state["told"]:
        _state["told"] = True
        logger.info("pyarrow was imported before stream_edge: the sinks convert records with the system "
                    "allocator, while Parquet writing keeps pyarrow's default (%s); set %s=system before "
                    "pyarrow is imported for the lower memory of docs/operations.md, or =%s to keep it",
                    pool.backend_name, POOL_ENV, pool.backend_name)
    return "system"

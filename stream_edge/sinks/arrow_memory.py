"""The Arrow memory pool of the edge's table sinks: the system allocator unless the user chose one.

pyarrow's default pool (mimalloc in the wheels) keeps the pages of freed buffers for reuse. A
table sink allocates in bursts (a partition's records converted to Arrow, a Parquet file written
from them, then all freed), so in a long-running edge those kept pages are most of what the sink
adds to the process's RSS beyond its bounded buffers: landing 2M JSON readings into the data-lake
sink, the process peaked ~33 MB lower with the system allocator (glibc malloc returns large blocks
to the OS when they are freed), at the same CPU (bench/README.md, lake_ingest).

So the table sinks (``DataLakeSink``, ``IcebergSink``) make the system allocator pyarrow's default
pool when they start, unless ``ARROW_DEFAULT_MEMORY_POOL`` is set: pyarrow's own switch, which then
decides (``ARROW_DEFAULT_MEMORY_POOL=mimalloc`` keeps pyarrow's default). The pool is process-wide:
Arrow code in the pipeline's own functions uses it too (docs/operations.md, "Memory").
"""

from __future__ import annotations

import logging
import os

import pyarrow as pa

__all__ = ("POOL_ENV", "use_edge_memory_pool")

POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"

logger = logging.getLogger(__name__)


def use_edge_memory_pool() -> str:
    """Make the system allocator pyarrow's default memory pool unless ``$ARROW_DEFAULT_MEMORY_POOL``
    names one; returns the backend now in use. Buffers allocated before keep their own pool (each
    Arrow buffer frees itself into the pool it came from), so switching at any time is safe."""
    pool = pa.default_memory_pool()
    if os.environ.get(POOL_ENV) or pool.backend_name == "system":
        return str(pool.backend_name)
    pa.set_memory_pool(pa.system_memory_pool())
    logger.debug("Arrow memory pool: system allocator (was %s; set %s to choose)", pool.backend_name, POOL_ENV)
    return "system"

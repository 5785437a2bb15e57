"""Long-lived start-up objects kept out of the cyclic garbage collector's scans (``gc.freeze``).

Before and while it starts consuming, an edge process builds a large object graph that lives as
long as the process: the Kafka client, pyarrow, and for the table sinks pyiceberg's catalog with
its pydantic models (imported lazily, at a sink's first write). Python's full collections walk
every tracked object, and a pipeline that buffers records (the table sinks hold thousands of
dicts between conversions to Arrow) triggers one every second or so, walking that whole graph
again each time: ~10% of the edge's CPU landing 2M readings into the data-lake sink with inline
registration (bench/README.md, lake_ingest).

``gc.freeze()`` moves every object alive at that moment to a permanent generation the collector
skips. :class:`StartupFreezer` does it when the run loop starts and again after any batch during
which modules were imported (a lazily imported library is as long-lived as the process); each
time after a full collection, so no garbage is frozen. Objects created by processing are never
frozen: the pipeline's own garbage is collected as before. When the run ends,
:meth:`StartupFreezer.unfreeze` gives every frozen object back to the collector (a program that
runs an application several times, or a test suite, does not keep a stopped run's cycles).
"""

from __future__ import annotations

import gc
import sys

__all__ = ("StartupFreezer",)


class StartupFreezer:
    """``freeze_if_imported()`` once per batch: cheap (one ``len``) unless modules were imported."""

    def __init__(self) -> None:
        self._modules = -1
        self.freezes = 0

    def freeze(self) -> None:
        """Collect, then move every object alive now out of the collector's scans."""
        gc.collect()
        gc.freeze()
        self._modules = len(sys.modules)
        self.freezes += 1

    @staticmethod
    def unfreeze() -> None:
        """Give every frozen object back to the collector (its oldest generation)."""
        gc.unfreeze()

    def freeze_if_imported(self) -> bool:
        """Freeze again if modules were imported since the last freeze; True when it did."""
        if len(sys.modules) == self._modules:
            return False
        self.freeze()
        return True

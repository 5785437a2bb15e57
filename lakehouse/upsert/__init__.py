"""The ``upsert`` job: a keyed Iceberg table kept equal to the last change per key of a changelog.

The edge lands a topic's every record, tombstones included (``DataLakeSink(include_kafka_metadata=
True)``: ``_kafka_*`` columns and ``_kafka_tombstone``); ``lakehouse register`` makes that lake a changelog
table; this job merges what the changelog gained since its last run into the keyed table, exactly
once. Modules, imported one way: ``options`` (options, report, merge modes; pure) -> ``changes``
(the changes read, set aside or kept, one per key) -> ``history`` (the bookmark) -> ``commit``
(the one commit: create, evolve, merge on a branch, fast-forward) -> ``job``.
"""

from lakehouse.upsert.job import run_upsert
from lakehouse.upsert.options import MERGE_MODES, UpsertOptions, UpsertReport

__all__ = ("MERGE_MODES", "UpsertOptions", "UpsertReport", "run_upsert")

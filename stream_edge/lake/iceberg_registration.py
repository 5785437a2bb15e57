"""Registering committed edge files in an Iceberg table: the one commit both registrars make.

The ``lakehouse register`` job (through :mod:`lakehouse.iceberg_tables`) and the data-lake sink's
inline registrar (:mod:`stream_edge.sinks.core.datalake.catalog`) both append edge files here,
with pyiceberg only (no Spark, no JVM): the files *in place* (the table references the edge's
Parquet files, their metrics read from the footers, the partition values from the files'
columns) and the writer's registration-ledger batch number as a table property, in ONE Iceberg
transaction, so a crash anywhere leaves either both or neither (docs/internals.md,
"Registration: two entry points, one path").

The edge files carry no Iceberg field ids: readers find their columns by name through the table's
name mapping, which must list every column, including those schema evolution added since. The
transaction therefore (re)writes the mapping from the current schema whenever it differs.

Duplicate files are the ledger's business (a file is owned by the lowest batch listing it), so
the transaction does not scan every manifest of the table for them on each commit.

Example::

    table = append_files(table, ["s3a://lake/t/day=1/part-a.parquet"],
                         properties={"lakehouse.register.last-batch": "7"},
                         snapshot_properties={"lakehouse.register.batch": "7"})
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

__all__ = ("NAME_MAPPING_PROPERTY", "append_files", "name_mapping_json", "set_name_mapping")

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def name_mapping_json(table: Any) -> str:
    """The name mapping of the table's current schema (every column, by name -> field id)."""
    return str(table.schema().name_mapping.model_dump_json())


def set_name_mapping(table: Any) -> Any:
    """Bring the table's name mapping up to its schema (after Spark DDL changed it); returns the
    refreshed table (the same one when nothing changed)."""
    mapping = name_mapping_json(table)
    if table.properties.get(NAME_MAPPING_PROPERTY) == mapping:
        return table
    with table.transaction() as tx:
        tx.set_properties({NAME_MAPPING_PROPERTY: mapping})
    return table.refresh()


def append_files(table: Any, file_uris: Sequence[str], *, properties: Mapping[str, str],
                 snapshot_properties: Mapping[str, str], branch: Optional[str] = None) -> Any:
    """Append ``file_uris`` (Parquet, in place) and set ``properties`` in one Iceberg commit.

    ``branch``: commit to that branch instead of ``main`` (write-audit-publish). Raises pyiceberg's
    ``CommitFailedException`` when another writer committed first (the caller refreshes, checks
    its batch property and retries) and ``ValueError`` naming the file when a file's columns do
    not fit the table's schema. Returns the table, whose metadata pyiceberg replaced with the
    committed one (no second load from the catalog: a registrar committing every few seconds
    would pay a metadata download and parse per commit for nothing).
    """
    if not file_uris:
        raise ValueError("append_files needs at least one file")
    mapping = name_mapping_json(table)
    with table.transaction() as tx:
        if table.properties.get(NAME_MAPPING_PROPERTY) != mapping:
            tx.set_properties({NAME_MAPPING_PROPERTY: mapping})
        kwargs: dict[str, Any] = {"snapshot_properties": dict(snapshot_properties), "check_duplicate_files": False}
        if branch:
            kwargs["branch"] = branch
        tx.add_files(file_paths=list(file_uris), **kwargs)
        tx.set_properties(dict(properties))
    return table

"""The pyiceberg catalog behind a Spark session's Iceberg catalog, for the jobs' metadata work.

The jobs read Iceberg metadata (UUID, partition spec, properties, snapshot totals) and register
files through pyiceberg, not through Iceberg's Java API over py4j: the same code the edge's inline
registrar runs (:mod:`stream_edge.lake.iceberg_registration`), and nothing that needs the driver's
JVM, so it runs the same under Spark Connect. The catalog is described by the session's own
configuration (``spark.sql.catalog.<name>.*``, what :mod:`lakehouse.session` or spark-submit's
``--conf`` set):

* ``type=rest``: pyiceberg's REST catalog with the same URI, warehouse, token or OAuth2 credential;
* ``type=hadoop`` (the embedded catalog): :class:`HadoopLayoutCatalog`, which reads and commits
  the layout Iceberg's ``HadoopCatalog`` keeps under the warehouse (``<ns>/<table>/metadata/
  v<N>.metadata.json`` and ``version-hint.text``). pyiceberg has no catalog of that kind.

S3 settings: the session's S3A endpoint and keys where it sets them, else what
:meth:`stream_edge.lake.s3_settings.S3Settings.from_env` resolves (the edge's precedence).

Example::

    catalog = pyiceberg_catalog(spark, "lake")
    table = catalog.load_table(("db", "sensor_readings"))
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING, Any

from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.noop import NoopCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.io import load_file_io
from pyiceberg.serializers import FromInputFile, ToOutputFile
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.update import update_table_metadata

from stream_edge.lake.s3_settings import S3Settings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

__all__ = ("HadoopLayoutCatalog", "pyiceberg_catalog", "catalog_properties")

VERSION_HINT = "version-hint.text"


class HadoopLayoutCatalog(NoopCatalog):
    """Tables of Iceberg's Hadoop-catalog layout under ``warehouse``, loaded and committed the way
    Iceberg's ``HadoopTableOperations`` does: version N+1's metadata file is created only if no
    other writer created it first (a concurrent commit fails with :class:`CommitFailedException`
    and is retried by the caller), then the version hint is moved on.

    Only loading and committing: namespaces and tables are created through Spark SQL (the other
    catalog operations are pyiceberg's ``NoopCatalog``'s, which refuse).
    """

    def __init__(self, name: str, warehouse: str, **properties: str) -> None:
        super().__init__(name, warehouse=warehouse, **properties)
        self.warehouse = warehouse.rstrip("/")

    def _table_location(self, identifier: str | tuple[str, ...]) -> str:
        return "/".join([self.warehouse, *Catalog.identifier_to_tuple(identifier)])

    def _io(self, location: str) -> Any:
        return load_file_io(dict(self.properties), location)

    def _current_version(self, location: str) -> int | None:
        """The table's current version: the hint, then any later version a writer committed
        before it could move the hint on (as Iceberg's Java reader does)."""
        io = self._io(location)
        hint = io.new_input(f"{location}/metadata/{VERSION_HINT}")
        if not hint.exists():
            return None
        with hint.open() as handle:
            version = int(handle.read().decode().strip())
        while io.new_input(self._metadata_path(location, version + 1)).exists():
            version += 1
        return version

    @staticmethod
    def _metadata_path(location: str, version: int) -> str:
        return f"{location}/metadata/v{version}.metadata.json"

    def load_table(self, identifier: str | tuple[str, ...]) -> Table:
        location = self._table_location(identifier)
        version = self._current_version(location)
        if version is None:
            raise NoSuchTableError(f"no Iceberg table at {location} (no metadata/{VERSION_HINT})")
        path = self._metadata_path(location, version)
        metadata = FromInputFile.table_metadata(self._io(location).new_input(path))
        return Table(Catalog.identifier_to_tuple(identifier), metadata=metadata, metadata_location=path,
                     io=load_file_io({**self.properties, **metadata.properties}, path), catalog=self)

    def table_exists(self, identifier: str | tuple[str, ...]) -> bool:
        return self._current_version(self._table_location(identifier)) is not None

    def commit_table(self, table: Table, requirements: tuple, updates: tuple) -> CommitTableResponse:
        current = self.load_table(table.name())
        for requirement in requirements:
            requirement.validate(current.metadata)  # CommitFailedException when another writer won
        metadata = update_table_metadata(base_metadata=current.metadata, updates=updates,
                                         metadata_location=current.metadata_location)
        location = self._table_location(table.name())
        version = int(current.metadata_location.rsplit("/v", 1)[1].split(".", 1)[0]) + 1
        target = self._metadata_path(location, version)
        self._create_exclusively(location, target, metadata)
        io = self._io(location)
        with io.new_output(f"{location}/metadata/{VERSION_HINT}").create(overwrite=True) as handle:
            handle.write(str(version).encode())
        return CommitTableResponse(metadata=metadata, metadata_location=target)  # type: ignore[call-arg]

    def _create_exclusively(self, location: str, target: str, metadata: Any) -> None:
        io = self._io(location)
        if target.startswith("file:") or target.startswith("/"):
            # Written aside, then linked into place: a link fails if the name exists, so of two
            # writers racing for version N exactly one commits (Java renames without overwrite).
            path = target.removeprefix("file://").removeprefix("file:")
            staged = f"{os.path.dirname(path)}/.{uuid.uuid4().hex}.metadata.json.tmp"
            ToOutputFile.table_metadata(metadata, io.new_output(staged))
            try:
                os.link(staged, path)
            except FileExistsError:
                raise CommitFailedException(f"version {target} was committed by another writer") from None
            finally:
                os.unlink(staged)
            return
        if io.new_input(target).exists():  # an object store: as atomic as Iceberg's own Hadoop tables there
            raise CommitFailedException(f"version {target} was committed by another writer")
        ToOutputFile.table_metadata(metadata, io.new_output(target))


def _conf(spark: "SparkSession", key: str) -> str | None:
    value = spark.conf.get(key, None)
    return str(value) if value not in (None, "") else None


def catalog_properties(spark: "SparkSession", name: str) -> dict[str, str]:
    """pyiceberg properties of the session's Iceberg catalog ``name`` (holds secrets: never log)."""
    prefix = f"spark.sql.catalog.{name}"
    kind = _conf(spark, f"{prefix}.type")
    if kind is None and _conf(spark, f"{prefix}.uri"):
        kind = "rest"
    props: dict[str, str] = {"type": kind or "hadoop"}
    for key in ("uri", "warehouse", "token", "credential", "oauth2-server-uri", "scope", "prefix"):
        value = _conf(spark, f"{prefix}.{key}")
        if value is not None:
            props[key] = value
    s3 = S3Settings.from_env(endpoint_url=_conf(spark, "spark.hadoop.fs.s3a.endpoint"),
                             access_key=_conf(spark, "spark.hadoop.fs.s3a.access.key"),
                             secret_key=_conf(spark, "spark.hadoop.fs.s3a.secret.key"),
                             session_token=_conf(spark, "spark.hadoop.fs.s3a.session.token"))
    props.update(s3.pyiceberg_properties())
    return props


_CACHE: dict[tuple[str, frozenset], Catalog] = {}


def pyiceberg_catalog(spark: "SparkSession", name: str) -> Catalog:
    """The pyiceberg catalog standing for the session's Iceberg catalog ``name`` (one per set of
    settings: a session reused with another warehouse or URI gets a catalog of its own)."""
    props = catalog_properties(spark, name)
    key = (name, frozenset(props.items()))
    if key not in _CACHE:
        kind = props.pop("type")
        if kind == "rest":
            _CACHE[key] = load_catalog(name, **{"type": "rest", **props})
        elif kind == "hadoop":
            if "warehouse" not in props:
                raise ValueError(f"Iceberg catalog {name!r} is a Hadoop catalog without "
                                 f"spark.sql.catalog.{name}.warehouse")
            _CACHE[key] = HadoopLayoutCatalog(name, **props)
        else:
            raise ValueError(f"Iceberg catalog {name!r} is of type {kind!r}; the jobs read Iceberg metadata "
                             "through pyiceberg, which they configure for 'rest' and 'hadoop' catalogs")
    return _CACHE[key]

"""lakehouse: the Spark side -- session, register, compact, windows, validate and SQL over Iceberg and Delta.

Example::

    from lakehouse import RegisterOptions, build_spark, run_register
    spark = build_spark()
    print(run_register(spark, RegisterOptions(source="file:///lake/ts/sensors", table="lake.db.sensors")).summary_line())

See ``lakehouse/README.md`` for the jobs and ``pipelines/cli.py`` for the ``lakehouse`` command.
"""

from lakehouse.compaction import CompactionVerificationError, CompactOptions, run_compact
from lakehouse.job_report import JobReport
from lakehouse.lake_files import EdgeFile, LakeLayoutError, LakeLocation, list_committed_files
from lakehouse.quality import DataQualityError, ValidateOptions, run_validate
from lakehouse.register import RegisterOptions, run_register
from lakehouse.register_ledger import LedgerError
from lakehouse.schema_evolution import IncompatibleSchemaError
from lakehouse.session import SparkSettings, SparkSetupError, build_spark
from lakehouse.sql_query import run_sql
from lakehouse.windows import WindowRecomputeOptions, WindowSpec, run_window_recompute

__all__ = (
    "CompactOptions", "CompactionVerificationError", "EdgeFile", "IncompatibleSchemaError", "JobReport",
    "LakeLayoutError", "LakeLocation", "LedgerError", "RegisterOptions", "SparkSettings", "SparkSetupError",
    "build_spark", "list_committed_files", "run_compact", "run_register", "run_sql",
    "DataQualityError", "ValidateOptions", "run_validate", "WindowRecomputeOptions", "WindowSpec",
    "run_window_recompute",
)

"""The lake layout shared by the edge and the Spark jobs (pure Python: no Spark, no pyarrow).

- :mod:`.partitioning`: Hive partition paths, escaping as Hive/Spark, UTC time columns, NULL.
- :mod:`.naming`: data file names, staging area, commit log location.
- :mod:`.commit_log`: the commit record format and the exactly-once decisions.
- :mod:`.fencing`: who may write a partition's commit log (owner epochs, conditional slots).
- :mod:`.exclusive_create`: create an entry only if absent (a link, a conditional PUT).
- :mod:`.s3_settings`: the one S3 settings object (endpoint, region, keys; one precedence).
- :mod:`.registration_ledger`, :mod:`.registrar`, :mod:`.schema_plan`,
  :mod:`.iceberg_registration`: registering the lake's files in a table, for the sink's
  registrar and ``lakehouse register`` alike.

The Spark jobs (``lakehouse``) import from the edge only this package and the window rules.
"""

from .commit_log import (
    CommitLogError,
    CommitRecord,
    CommittedFile,
    RecoveryPlan,
    committed_files,
    decode_commit_record,
    encode_commit_record,
    first_unwritten_index,
    latest_commit_name,
    names_to_prune,
    plan_recovery,
)
from .fencing import CommitFencedError, check_owner, claim_record, conflict_outcome, effective_commit, next_slot
from .naming import (
    COMMITS_DIR,
    STAGING_DIR,
    commit_dir,
    commit_record_path,
    commit_record_slot,
    data_file_name,
    final_file_path,
    is_hidden_name,
    parse_data_file_name,
    staged_file_epoch,
    staged_file_path,
    staging_epoch_prefix,
    staging_prefix,
    table_root,
)
from .partitioning import (
    DEFAULT_PARTITION_NAME,
    TIME_PARTITION_COLUMNS,
    escape_path_name,
    parse_partition_path,
    partition_path,
    partition_segment,
    partition_value_string,
    time_partition_values,
    unescape_path_name,
    validate_hive_columns,
)

__all__ = (
    "CommitLogError", "CommitRecord", "CommittedFile", "RecoveryPlan", "committed_files",
    "decode_commit_record", "encode_commit_record", "first_unwritten_index", "latest_commit_name",
    "names_to_prune", "plan_recovery", "COMMITS_DIR", "STAGING_DIR", "commit_dir",
    "commit_record_path", "data_file_name", "final_file_path", "is_hidden_name",
    "parse_data_file_name", "staged_file_path", "staging_prefix", "table_root",
    "DEFAULT_PARTITION_NAME", "TIME_PARTITION_COLUMNS", "escape_path_name", "parse_partition_path",
    "partition_path", "partition_segment", "partition_value_string", "time_partition_values",
    "unescape_path_name", "validate_hive_columns", "CommitFencedError", "check_owner", "claim_record",
    "conflict_outcome", "effective_commit", "next_slot", "commit_record_slot", "staged_file_epoch",
    "staging_epoch_prefix",
)

"""Byte-compile the installed packages this project's processes import, once per environment.

The tests and the demo start hundreds of Python processes. Where ``PYTHONDONTWRITEBYTECODE`` is
set (CI images often set it) each of them would compile pyspark's and pandas' modules again
(~1.1 CPU-s a process), so ``./dev bootstrap`` writes the byte code once, when it installs the
environment. It imports what the processes import rather than compiling every installed file:
~2,700 of the ~7,500 files (moto's hundreds of AWS services and mypy's sources are never
imported), 10 s and 14.5 CPU-s on two cores where ``compileall`` took 14 s and 26 CPU-s. A module
outside these lists is compiled where it is first imported, as Python always does::

    python -m infra.local.bytecode        # what ./dev bootstrap runs
"""

from __future__ import annotations

import subprocess
import sys

#: two groups imported side by side (a module both imported would be compiled twice: pyspark,
#: Great Expectations and whatever else imports numpy and pandas stay in the first)
GROUPS: tuple[tuple[str, ...], ...] = (
    ("pandas", "pyarrow.parquet", "pyarrow.dataset", "pyspark.sql", "pyspark.sql.functions",
     "pyspark.sql.pandas.functions", "delta", "chispa", "great_expectations"),
    ("pytest", "xdist", "hypothesis", "boto3", "moto.server", "pyiceberg.catalog.rest", "pyiceberg.table",
     "confluent_kafka.admin", "redis", "psycopg", "paho.mqtt.client", "azure.storage.blob", "fastavro"),
)

# Each group's process: byte code written whatever the environment says; a package that is not
# installed (an optional extra) is skipped, as its processes never run here.
_IMPORT_ALL = """
import importlib, sys
sys.dont_write_bytecode = False
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
"""


def compile_imported(groups: tuple[tuple[str, ...], ...] = GROUPS) -> None:
    """Import each group in a process of its own (this interpreter), all at once; wait for all."""
    procs = [subprocess.Popen([sys.executable, "-c", _IMPORT_ALL, *group]) for group in groups]
    failed = [group[0] for group, proc in zip(groups, procs) if proc.wait() != 0]
    if failed:
        raise SystemExit(f"bytecode: importing the group starting with {failed} failed")


if __name__ == "__main__":
    compile_imported()

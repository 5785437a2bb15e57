"""spark-submit entry point of the ``upsert`` job: same arguments as ``lakehouse upsert``.

Example::

    spark-submit pipelines/jobs/upsert.py --table lake.db.t --source lake.db.devices_changelog
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["upsert", *sys.argv[1:]]))

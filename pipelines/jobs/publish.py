"""spark-submit entry point of the ``publish`` step: same arguments as ``lakehouse publish``.

Example::

    spark-submit pipelines/jobs/publish.py --table lake.db.sensor_readings --branch audit_2026010112
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["publish", *sys.argv[1:]]))

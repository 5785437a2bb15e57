"""spark-submit entry point of the ``validate`` job: same arguments as ``lakehouse validate``.

Checks a table against its expectations spec with Great Expectations; exits 1 when a critical
expectation fails (the summary line still goes to stdout). Spec format: ``pipelines/quality/README.md``.

Example::

    spark-submit pipelines/jobs/validate.py --table lake.db.sensor_readings \
        --spec pipelines/quality/sensor_readings.json --since 1d --data-docs-dir /srv/data-docs
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["validate", *sys.argv[1:]]))

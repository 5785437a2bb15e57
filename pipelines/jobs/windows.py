"""spark-submit entry point of the ``windows`` job: same arguments as ``lakehouse windows``.

Example::

    spark-submit pipelines/jobs/windows.py --table lake.db.sensor_readings \
        --output lake.db.temp_1m --duration 1m --value-column temp
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["windows", *sys.argv[1:]]))

"""spark-submit entry point of the ``maintain`` job: same arguments as ``lakehouse maintain``.

Example::

    spark-submit pipelines/jobs/maintain.py --table lake.db.t --action rewrite-manifests
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["maintain", *sys.argv[1:]]))

"""spark-submit entry point of the ``register`` job: same arguments as ``lakehouse register``.

Example::

    spark-submit pipelines/jobs/register.py --help
"""

import os
import sys

if __package__ in (None, ""):  # run as a script by spark-submit: make the repo importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from pipelines.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(["register", *sys.argv[1:]]))

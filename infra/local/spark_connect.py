"""A local Spark Connect server on loopback, from pyspark's own jars, with the Iceberg and Delta
runtimes: the jobs run over it unchanged with ``SPARK_REMOTE`` (or ``--remote``)::

    ./dev services up spark-connect
    SPARK_REMOTE=$(grep SPARK_CONNECT_URL .local/services.env | cut -d= -f2) ./dev lakehouse sql "SELECT 1"

The server is ``org.apache.spark.sql.connect.service.SparkConnectServer`` (the jar ships in the
pyspark wheel) started through pyspark's ``spark-submit`` on a ``local[2]`` master, bound to
127.0.0.1 only. It gets what cannot change once a session is up: the SQL extensions, Delta's
session catalog, the runtime jars on the driver's class path, the S3A settings of the local S3
server and the warehouse folder; the small-machine defaults of :mod:`lakehouse.session`. The
Iceberg catalogs are session settings each client sets (``lakehouse.session.connect_session``).

The env file gets ``SPARK_CONNECT_URL`` (not ``SPARK_REMOTE``: a running server must not silently
move every other job and test onto it).
"""

from __future__ import annotations

import os
import socket
import sys

from infra.local.services import Service, ServiceError, env_file
from infra.local.spark_cluster import spark_home

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _services_env() -> dict[str, str]:
    """What ``./dev services up`` wrote for the default services (the S3 server's endpoint, ...)."""
    path = env_file()
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {key.strip(): value.strip() for key, value in pairs}


def server_conf(warehouse: str, env: dict[str, str]) -> dict[str, str]:
    """The server's static settings (extensions, Delta catalog, jars, S3A, warehouse, defaults).

    >>> conf = server_conf("/w", {"S3_ENDPOINT": "http://127.0.0.1:9"})
    >>> conf["spark.connect.grpc.binding.address"], conf["spark.hadoop.fs.s3a.endpoint"]
    ('127.0.0.1', 'http://127.0.0.1:9')
    """
    from lakehouse.session import DELTA_EXTENSIONS, ICEBERG_EXTENSIONS, JOB_DEFAULTS, LOCAL_DEFAULTS, \
        cached_spark_jars, s3a_conf
    from stream_edge.lake.s3_settings import S3Settings

    conf = {**LOCAL_DEFAULTS, **JOB_DEFAULTS,
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{DELTA_EXTENSIONS}",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": warehouse}
    jars = cached_spark_jars()
    if jars:
        conf["spark.driver.extraClassPath"] = ":".join(jars)
    conf.update(s3a_conf(S3Settings.from_env(env)))  # the same store as the jobs and the edge
    return conf


class SparkConnectServer(Service):
    """Spark Connect on ``sc://127.0.0.1:<port>`` (one local driver, 2 cores)."""

    startup_timeout = 120.0

    def __init__(self) -> None:
        super().__init__("spark-connect")

    def prepare(self) -> None:
        submit = spark_home() / "bin" / "spark-submit"
        if not submit.exists():
            raise ServiceError(f"{submit} is missing; reinstall pyspark (./dev bootstrap) or set SPARK_HOME")
        self._port("grpc")
        for folder in ("conf", "scratch", "spark-warehouse"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)

    def command(self) -> tuple[list[str], dict[str, str]]:
        settings = dict(_services_env(), **{k: v for k, v in os.environ.items() if k.startswith(("AWS_", "S3_"))})
        conf = server_conf(str(self.home / "spark-warehouse"), settings)
        conf["spark.connect.grpc.binding.port"] = str(self._saved_port("grpc"))
        args = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--name", "spark-connect",
                "--master", "local[2]"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        env = {
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(self.home / "scratch"),
            "SPARK_CONF_DIR": str(self.home / "conf"),
            "SPARK_DIST_CLASSPATH": "",
            # Python workers (the windows job's pandas UDFs) run the project's interpreter
            "PYSPARK_PYTHON": sys.executable,
            **{k: v for k, v in settings.items() if k.startswith("AWS_")},
        }
        return args + ["spark-internal"], env

    def url(self) -> str:
        return f"sc://127.0.0.1:{self._saved_port('grpc')}"

    def env_entries(self) -> dict[str, str]:
        return {"SPARK_CONNECT_URL": self.url()}

    def ready(self) -> bool:
        port = self._saved_port("grpc")
        if port is None:
            return False
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(1)
            return sock.connect_ex(("127.0.0.1", port)) == 0

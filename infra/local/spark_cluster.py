"""A real Spark standalone cluster on loopback: one master and two workers (1 core, 1g each).

Started with pyspark's own launcher (``$SPARK_HOME/bin/spark-class``, ``SPARK_HOME`` being the
installed pyspark package), so the cluster runs exactly the Spark version the jobs are built
against; nothing else is installed. Each process has its own folder under ``.local/`` (work dir,
scratch dir, logs) and free ports remembered across restarts::

    ./dev services up spark-master spark-worker-1 spark-worker-2
    LAKEHOUSE_SPARK_MASTER=$(grep SPARK_CLUSTER_MASTER .local/services.env | cut -d= -f2) \\
        ./dev lakehouse sql "SELECT 1"
    ./dev services down spark-worker-1 spark-worker-2 spark-master

The env file gets ``SPARK_CLUSTER_MASTER`` (not ``LAKEHOUSE_SPARK_MASTER``: a running cluster must
not silently move every other job and test onto it) and ``SPARK_CLUSTER_UI``.
"""

from __future__ import annotations

import json
import os
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from infra.local.services import Service, ServiceError, _http_ok

WORKER_CORES = 1
WORKER_MEMORY = "1g"
DAEMON_MEMORY = "256m"


def spark_home() -> Path:
    """``$SPARK_HOME``, else the installed pyspark package (it ships ``bin/spark-class`` and the jars)."""
    env = os.environ.get("SPARK_HOME")
    if env:
        return Path(env)
    try:
        import pyspark
    except ImportError as exc:
        raise ServiceError("pyspark is not installed in this interpreter; install the 'lakehouse' extra "
                           "(./dev bootstrap) or set SPARK_HOME") from exc
    return Path(pyspark.__file__).parent


def _spark_class() -> Path:
    path = spark_home() / "bin" / "spark-class"
    if not path.exists():
        raise ServiceError(f"{path} is missing; reinstall pyspark (./dev bootstrap) or set SPARK_HOME")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise ServiceError("no java on PATH and no JAVA_HOME: install Java 17 (apt-get install -y openjdk-17-jre-headless)")
    return path


def _json(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


def _daemon_env(home: Path) -> dict[str, str]:
    """Environment of a master/worker daemon: loopback only, logs and scratch under ``home``."""
    (home / "scratch").mkdir(parents=True, exist_ok=True)
    return {
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(home / "scratch"),
        "SPARK_LOG_DIR": str(home),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "SPARK_NO_DAEMONIZE": "1",
        "SPARK_CONF_DIR": str(home / "conf"),
        # executors get what spark-submit ships, never the runtime jars of the test suite's class
        # path (infra/local/spark_cds.py), which the workers would otherwise hand down
        "SPARK_DIST_CLASSPATH": "",
        # the daemons only schedule and heartbeat: C1 and the serial GC halve their CPU (a master and
        # two workers started, 30 s idle, stopped: 19.6 -> 10.8 CPU-s); not the executors they launch
        # (their flags come from spark.executor.extraJavaOptions)
        "SPARK_DAEMON_JAVA_OPTS": os.environ.get("SPARK_DAEMON_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:-UseCodeCacheFlushing -XX:+UseSerialGC"),
    }


class SparkMaster(Service):
    """The standalone master (``org.apache.spark.deploy.master.Master``) on 127.0.0.1."""

    startup_timeout = 90.0

    def __init__(self) -> None:
        super().__init__("spark-master")

    def prepare(self) -> None:
        _spark_class()
        self._port("rpc")
        self._port("ui")
        (self.home / "conf").mkdir(parents=True, exist_ok=True)

    def command(self) -> tuple[list[str], dict[str, str]]:
        return [str(_spark_class()), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                "--port", str(self._saved_port("rpc")), "--webui-port", str(self._saved_port("ui"))], \
            _daemon_env(self.home)

    def url(self) -> str:
        """``spark://127.0.0.1:<port>``: what ``LAKEHOUSE_SPARK_MASTER`` should be set to."""
        return f"spark://127.0.0.1:{self._saved_port('rpc')}"

    def ui(self) -> str:
        return f"http://127.0.0.1:{self._saved_port('ui')}"

    def env_entries(self) -> dict[str, str]:
        return {"SPARK_CLUSTER_MASTER": self.url(), "SPARK_CLUSTER_UI": self.ui()}

    def state(self) -> dict[str, Any]:
        """The master's JSON status (workers, applications); ``{}`` when it does not answer."""
        if self._saved_port("ui") is None:
            return {}
        return _json(self.ui() + "/json/") or {}

    def ready(self) -> bool:
        return self.state().get("status") == "ALIVE"


class SparkWorker(Service):
    """A standalone worker (``org.apache.spark.deploy.worker.Worker``): 1 core, 1g, own work dir."""

    startup_timeout = 90.0

    def __init__(self, name: str) -> None:
        super().__init__(name)

    def _master(self) -> SparkMaster:
        master = SparkMaster()
        if not master.running():
            raise ServiceError(f"{self.name} needs the master: start it first with "
                               f"'./dev services up spark-master {self.name}'")
        return master

    def prepare(self) -> None:
        _spark_class()
        self._master()
        self._port("rpc")
        self._port("ui")
        for folder in ("work", "conf"):
            (self.home / folder).mkdir(parents=True, exist_ok=True)

    def command(self) -> tuple[list[str], dict[str, str]]:
        env = _daemon_env(self.home)
        env["SPARK_WORKER_DIR"] = str(self.home / "work")
        # finished applications' folders (executor logs, fetched files) go after a minute
        env["SPARK_WORKER_OPTS"] = ("-Dspark.worker.cleanup.enabled=true -Dspark.worker.cleanup.interval=60 "
                                    "-Dspark.worker.cleanup.appDataTtl=60")
        return [str(_spark_class()), "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--port", str(self._saved_port("rpc")), "--webui-port", str(self._saved_port("ui")),
                "--cores", str(WORKER_CORES), "--memory", WORKER_MEMORY, "--work-dir", str(self.home / "work"),
                self._master().url()], env

    def env_entries(self) -> dict[str, str]:
        return {}

    def registered(self) -> dict[str, Any] | None:
        """This worker as the master lists it, if the master knows it as ALIVE."""
        port = self._saved_port("rpc")
        for worker in SparkMaster().state().get("workers", []):
            if worker.get("port") == port and worker.get("state") == "ALIVE":
                return dict(worker)
        return None

    def ready(self) -> bool:
        return (self._saved_port("ui") is not None and _http_ok(f"http://127.0.0.1:{self._saved_port('ui')}/json/")
                and self.registered() is not None)


class SparkWorker1(SparkWorker):
    def __init__(self) -> None:
        super().__init__("spark-worker-1")


class SparkWorker2(SparkWorker):
    def __init__(self) -> None:
        super().__init__("spark-worker-2")

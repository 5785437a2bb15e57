"""Local services for the demo and the tests: a real Kafka broker (KRaft), Apache Iceberg's REST
catalog server, and an S3-compatible server (moto), each on loopback and a free port.

One manager for people and for pytest, so both start services the same way::

    python -m infra.local.services up        # idempotent: starts only what is not running
    python -m infra.local.services status
    python -m infra.local.services logs kafka
    python -m infra.local.services down      # stops everything, no stray processes

Addresses go to one env file (``.local/services.env`` by default) that every tool reads::

    KAFKA_BOOTSTRAP=127.0.0.1:40123
    ICEBERG_REST_URI=http://127.0.0.1:40125
    S3_ENDPOINT=http://127.0.0.1:40127
    ...

The state directory is ``$STREAMLAKE_LOCAL_DIR`` or ``<repo>/.local``; the JVM jars come from the
local jar cache filled by ``infra/jars/fetch.sh``. Only the standard library is used here, except
for the Kafka readiness probe (confluent-kafka, installed with the ``edge`` extra).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import importlib.util
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

# The Service base and shared helpers (re-exported: optional service modules and tests import
# them from here).
from infra.local.service_base import (REPO_ROOT, Service, ServiceError, _alive, _http_ok,  # noqa: F401
                                      _java, _require_jars, env_file, free_port, jar_cache, local_dir,
                                      service_jvm_opts)


def kafka_cluster_id() -> str:
    """A new KRaft cluster id, as ``kafka-storage.sh random-uuid`` prints it (16 random bytes,
    URL-safe base64 without padding), without starting a JVM for it.

    >>> len(kafka_cluster_id()), kafka_cluster_id().startswith("-")
    (22, False)
    """
    while True:  # Kafka never hands out an id that starts with "-" (it would read as a flag)
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


class Kafka(Service):
    """Apache Kafka, single node, KRaft (broker and controller in one process)."""

    def __init__(self) -> None:
        super().__init__("kafka")

    def prepare(self) -> None:
        jars = _require_jars("kafka")
        port, cport = self._port("broker"), self._port("controller")
        data = self.home / "data"
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(data),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            # Tests replay fixed, old event timestamps: never let retention delete them.
            "log.retention.ms": "-1",
            "message.max.bytes": str(8 * 1024 * 1024),
            # One node: the controller's no-op records (every 500 ms by default, each appended,
            # flushed and fetched by the broker) only show that an idle quorum is alive.
            "metadata.max.idle.interval.ms": "0",
        }
        conf = self.home / "server.properties"
        conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.home / "log4j2.properties").write_text(
            "status = warn\n"
            "appender.file.type = File\n"
            "appender.file.name = FILE\n"
            f"appender.file.fileName = {self.home / 'server.log'}\n"
            "appender.file.layout.type = PatternLayout\n"
            "appender.file.layout.pattern = [%d] %p %m (%c)%n\n"
            "rootLogger.level = INFO\n"
            "rootLogger.appenderRef.file.ref = FILE\n"
        )
        cp = f"{jars}/*"
        if not (data / "meta.properties").exists():
            subprocess.run(
                [_java(), *service_jvm_opts(), "-cp", cp, "kafka.tools.StorageTool", "format", "-t", kafka_cluster_id(),
                 "-c", str(conf), "--ignore-formatted"],
                check=True, capture_output=True, text=True,
            )

    def command(self) -> tuple[list[str], dict[str, str]]:
        jars = _require_jars("kafka")
        return [
            # 1 GB: every topic and partition keeps metadata and meters on the heap; at 512 MB a
            # broker that has hosted a few test runs (thousands of partitions) spent its CPU in full GCs
            _java(), "-Xmx1g", "-XX:+UseSerialGC", *service_jvm_opts(),
            f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
            "-Dlog4j2.shutdownHookEnabled=false", f"-Dkafka.logs.dir={self.home}",
            "-cp", f"{jars}/*", "kafka.Kafka", str(self.home / "server.properties"),
        ], {}

    def bootstrap(self) -> str:
        return f"127.0.0.1:{self._saved_port('broker')}"

    def env_entries(self) -> dict[str, str]:
        return {"KAFKA_BOOTSTRAP": self.bootstrap()}

    def ready(self) -> bool:
        if self._saved_port("broker") is None:
            return False
        try:
            from confluent_kafka.admin import AdminClient
        except ImportError:  # fall back to a TCP probe outside the project venv
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self._saved_port("broker")), 1):
                return True
            return False
        admin = AdminClient({"bootstrap.servers": self.bootstrap(), "log_level": 0,
                             "logger": _SilentLogger()})
        try:
            md = admin.list_topics(timeout=2)
            return bool(md.brokers)
        except Exception:  # noqa: BLE001 - not ready yet is any failure
            return False


class _SilentLogger:
    """librdkafka logs connection refusals loudly while the broker boots; keep them quiet."""

    def log(self, *args, **kwargs) -> None:
        return None

    def __getattr__(self, name: str) -> Callable[..., None]:
        return self.log


class IcebergRest(Service):
    """Apache Iceberg's REST catalog server with a SQLite catalog and a local warehouse."""

    startup_timeout = 60.0

    def __init__(self) -> None:
        super().__init__("iceberg-rest")

    def warehouse(self) -> Path:
        return self.home / "warehouse"

    def prepare(self) -> None:
        _require_jars("iceberg-rest")
        self._port("http")
        self.warehouse().mkdir(parents=True, exist_ok=True)

    def command(self) -> tuple[list[str], dict[str, str]]:
        jars = _require_jars("iceberg-rest")
        env = {
            "CATALOG_WAREHOUSE": self.warehouse().as_uri(),
            "CATALOG_URI": f"jdbc:sqlite:{self.home / 'catalog.db'}",
            "CATALOG_JDBC_USER": "iceberg",
            "CATALOG_JDBC_PASSWORD": "iceberg",
            "CATALOG_REST_PORT": str(self._saved_port("http")),
        }
        # Iceberg's fixture server listens on every interface; the launcher serves the same
        # catalog on loopback only (a single-file Java program, compiled in memory at start)
        return [_java(), "-Xmx384m", "-XX:+UseSerialGC", *service_jvm_opts(), "-cp", f"{jars}/*",
                str(Path(__file__).resolve().parent / "java" / "LoopbackRestCatalog.java")], env

    def uri(self) -> str:
        return f"http://127.0.0.1:{self._saved_port('http')}"

    def env_entries(self) -> dict[str, str]:
        return {"ICEBERG_REST_URI": self.uri(), "ICEBERG_WAREHOUSE": self.warehouse().as_uri()}

    def ready(self) -> bool:
        return self._saved_port("http") is not None and _http_ok(self.uri() + "/v1/config")


class S3(Service):
    """moto's S3-compatible server (in memory; data lives as long as the process), conditional
    writes atomic as on S3."""

    startup_timeout = 30.0

    def __init__(self) -> None:
        super().__init__("s3")

    def prepare(self) -> None:
        self._port("http")

    def command(self) -> tuple[list[str], dict[str, str]]:
        if importlib.util.find_spec("moto") is None:
            raise ServiceError(f"moto's server is not installed for {sys.executable}; install the 'dev' extra")
        # moto_server, with conditional writes atomic as on S3 (infra/local/s3_server.py)
        return [sys.executable, "-m", "infra.local.s3_server", "-H", "127.0.0.1", "-p",
                str(self._saved_port("http"))], {}

    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._saved_port('http')}"

    def env_entries(self) -> dict[str, str]:
        # moto accepts any credentials; these are test values, not secrets.
        return {"S3_ENDPOINT": self.endpoint(), "AWS_ACCESS_KEY_ID": "testing",
                "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}

    def ready(self) -> bool:
        return self._saved_port("http") is not None and _http_ok(self.endpoint() + "/")


SERVICES: dict[str, Callable[[], Service]] = {"kafka": Kafka, "iceberg-rest": IcebergRest, "s3": S3}
"""The default set: what ``up()`` with no names starts (the demo and most tests need these)."""

# Optional services, each in its own module under infra/local/, imported on first use and started
# only when named (``./dev services up postgres``) or asked for by a test fixture
# (``ensure_services`` in tests/conftest.py). Entry: name -> "module:ClassName" (a Service subclass
# whose constructor takes no argument). Add one line per new service.
OPTIONAL_SERVICES: dict[str, str] = {
    "postgres": "infra.local.connector_services:PostgreSQL",
    "redis": "infra.local.connector_services:Redis",
    "mosquitto": "infra.local.connector_services:Mosquitto",
    "azurite": "infra.local.azurite_service:Azurite",
    "spark-master": "infra.local.spark_cluster:SparkMaster",
    "spark-worker-1": "infra.local.spark_cluster:SparkWorker1",
    "spark-worker-2": "infra.local.spark_cluster:SparkWorker2",
    "kafka-connect": "infra.local.kafka_connect_service:KafkaConnect",
    "spark-connect": "infra.local.spark_connect:SparkConnectServer",
}


def known_services() -> list[str]:
    """Every service name, default ones first."""
    return list(SERVICES) + list(OPTIONAL_SERVICES)


def _factory(name: str) -> Callable[[], Service]:
    if name in SERVICES:
        return SERVICES[name]
    module_name, _, class_name = OPTIONAL_SERVICES[name].partition(":")
    return getattr(importlib.import_module(module_name), class_name)


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise up/down across processes (pytest workers, a person's shell, the demo)."""
    local_dir().mkdir(parents=True, exist_ok=True)
    with open(local_dir() / "services.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _select(names: list[str] | None, every: bool = False) -> list[Service]:
    """The named services; with no names the default set, or every known one with ``every``."""
    names = names or (known_services() if every else list(SERVICES))
    unknown = [n for n in names if n not in SERVICES and n not in OPTIONAL_SERVICES]
    if unknown:
        raise ServiceError(f"unknown service(s) {unknown}; known: {known_services()}")
    return [_factory(n)() for n in names]


def up(names: list[str] | None = None) -> dict[str, str]:
    """Start the named services (the default set by default) unless running; write and return the
    env file (the addresses of every running service, optional ones included).

    Returns the names started by this call under the key ``_STARTED`` (comma-separated), so a
    caller such as the test runner can stop exactly what it started.
    """
    with _locked():
        selected = _select(names)
        # The default services depend on nothing: they start side by side (Kafka's ~6 s overlaps
        # the catalog's and S3's start). Optional ones may need a default one or each other (Kafka
        # Connect the broker, a Spark worker the master): they start after, in the order given.
        independent = [svc for svc in selected if svc.name in SERVICES]
        with ThreadPoolExecutor(max_workers=max(1, len(independent))) as pool:
            first = list(pool.map(lambda svc: svc.start(), independent))
        started = [svc.name for svc, did in zip(independent, first) if did]
        started += [svc.name for svc in selected if svc.name not in SERVICES and svc.start()]
        env = _write_env()
    env["_STARTED"] = ",".join(started)
    return env


def down(names: list[str] | None = None) -> list[str]:
    """Stop the named services (every known one by default); returns the names that were running."""
    with _locked():
        stopped = [svc.name for svc in _select(names, every=True) if svc.stop()]
        _write_env()
    return stopped


def _write_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for svc in _select(None, every=True):
        if svc.running():
            env.update(svc.env_entries())
    path = env_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    tmp.replace(path)
    return env


def read_env() -> dict[str, str]:
    """The addresses of the running services, as written by :func:`up`."""
    try:
        lines = env_file().read_text().splitlines()
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in lines if "=" in line)


def status() -> list[tuple[str, str, str]]:
    rows = []
    for svc in _select(None, every=True):
        pid = svc.pid()
        if pid is None:
            rows.append((svc.name, "stopped", ""))
        else:
            state = "ready" if svc.ready() else "starting/unhealthy"
            rows.append((svc.name, f"{state} (pid {pid})", " ".join(f"{k}={v}" for k, v in svc.env_entries().items()
                                                                   if not k.startswith("AWS_"))))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="services", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    for cmd, help_ in (("up", "start services (idempotent) and wait until ready"),
                       ("down", "stop services and their child processes"),
                       ("status", "show each service and its address")):
        p = sub.add_parser(cmd, help=help_)
        p.add_argument("names", nargs="*", help=f"default set {list(SERVICES)}; also {list(OPTIONAL_SERVICES)}")
    p = sub.add_parser("logs", help="print the last lines of a service's log")
    p.add_argument("name", choices=known_services())
    p.add_argument("-n", type=int, default=60, help="number of lines")
    sub.add_parser("env", help="print the env file path and contents")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "up":
            t0 = time.monotonic()
            env = up(args.names or None)
            started = env.pop("_STARTED")
            print(f"services up ({'started ' + started if started else 'already running'}; "
                  f"{time.monotonic() - t0:.1f}s); env file: {env_file()}")
            for name, state, addr in status():
                print(f"  {name:13} {state:24} {addr}")
        elif args.cmd == "down":
            stopped = down(args.names or None)
            print(f"stopped: {', '.join(stopped) if stopped else 'nothing was running'}")
        elif args.cmd == "status":
            for name, state, addr in status():
                print(f"{name:13} {state:24} {addr}")
        elif args.cmd == "logs":
            svc = _factory(args.name)()
            print(f"== {svc.log_file}")
            print(svc.tail(args.n))
            server_log = svc.home / "server.log"
            if server_log.exists():
                print(f"== {server_log}")
                print("\n".join(server_log.read_text(errors="replace").splitlines()[-args.n:]))
        elif args.cmd == "env":
            print(f"# {env_file()}")
            print(env_file().read_text() if env_file().exists() else "# (no services started)")
    except ServiceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

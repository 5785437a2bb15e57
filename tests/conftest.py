"""Session fixtures shared by every test: the real local services and one Spark session.

Services are started through the same manager people use (``./dev services up``); a service that
cannot start is a test failure with the reason and the command to investigate, never a skip.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

from infra.local import services, spark_cds


@pytest.fixture(scope="session")
def services_env() -> dict[str, str]:
    """Addresses of the running local services (starts them if needed; idempotent).

    Keys: KAFKA_BOOTSTRAP, ICEBERG_REST_URI, ICEBERG_WAREHOUSE, S3_ENDPOINT, AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_REGION. Services started here stay up for other test runs; the
    README's test command (``./dev test``) stops what it started when the run ends.
    """
    if os.environ.get("STREAMLAKE_QUICK_TESTS"):
        pytest.fail("'./dev test --quick' starts no services: a test that needs them belongs in "
                    "tests/integration/ (or carries the integration/spark marker)", pytrace=False)
    try:
        env = services.up()
    except services.ServiceError as exc:
        pytest.fail(
            f"local services could not start: {exc}\n"
            "Start them by hand with './dev services up' and inspect './dev services logs <name>'.",
            pytrace=False,
        )
    env.pop("_STARTED", None)
    return env


def _started_file() -> Path:
    """Where this run notes the optional services it started: one file per run, shared by the
    pytest-xdist workers (they inherit the controller's environment), read by the controller."""
    return services.local_dir() / f"tests-started-{os.environ['STREAMLAKE_TEST_RUN']}.txt"


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.fixture(scope="session")
def ensure_services() -> Callable[..., dict[str, str]]:
    """``ensure_services("postgres", "redis") -> env``: start optional services a test needs.

    Only the default set (Kafka, Iceberg REST, S3) is started by ``./dev test`` up front; each
    optional server (see ``OPTIONAL_SERVICES`` in infra/local/services.py) starts the first time a
    test asks for it, so a selected subset of tests starts only what it uses. What this run started
    is stopped when the whole run ends (by the controller, not by the parallel worker that happened
    to start it, as other workers may still use it); a server that was already running is left alone.
    """

    def ensure(*names: str) -> dict[str, str]:
        try:
            env = services.up(list(names))
        except services.ServiceError as exc:
            pytest.fail(f"local service(s) {list(names)} could not start: {exc}\n"
                        f"Try './dev services up {' '.join(names)}' and './dev services logs <name>'.",
                        pytrace=False)
        started = [n for n in env.pop("_STARTED").split(",") if n]
        if started:
            with open(_started_file(), "a") as notes:
                notes.write("".join(f"{n}\n" for n in started))
        return env

    return ensure


@pytest.fixture(scope="session")
def kafka_bootstrap(services_env: dict[str, str]) -> str:
    """``host:port`` of the real local Kafka broker (KRaft)."""
    return services_env["KAFKA_BOOTSTRAP"]


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap})


@pytest.fixture()
def make_topic(kafka_admin) -> Callable[..., str]:
    """Factory: ``make_topic(partitions=1, prefix="t", config=None)`` creates a unique topic."""
    from confluent_kafka.admin import NewTopic

    def create(partitions: int = 1, prefix: str = "t", config: dict[str, str] | None = None) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        futures = kafka_admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})]
        )
        futures[name].result(timeout=30)
        return name

    return create


@pytest.fixture(scope="session")
def spark_local_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="session")
def spark(services_env: dict[str, str], spark_local_dir: Path) -> Iterator["object"]:
    """One local SparkSession for the whole test run (a session costs 5-9 s to start).

    Catalogs: ``rest`` is Iceberg through the real REST catalog server; ``embedded`` is the
    embedded Iceberg catalog (no server, warehouse in a temp folder); ``spark_catalog`` is Delta.
    ``s3a://`` reaches the local S3 server.
    """
    from lakehouse.session import SparkSettings, build_spark

    settings = SparkSettings.from_env(
        env=services_env, catalog_name="rest", local_dir=str(spark_local_dir), app_name="tests"
    )
    settings.extra_conf.update({
        # The tests' tables hold tens to hundreds of rows: one task per stage instead of two halves
        # what each stage pays per task (the task binary deserialized, per-partition projections
        # generated, Delta's state reconstruction per partition) and computes the same rows
        # (a whole run's lane drivers 552 -> 439 CPU-s; spark_cds.DRIVER_SQL_DEFAULTS does the same
        # for the drivers the tests start with spark-submit)
        **spark_cds.ONE_TASK_PER_STAGE,
        "spark.sql.catalog.embedded": "org.apache.iceberg.spark.SparkCatalog",
        "spark.sql.catalog.embedded.type": "hadoop",
        "spark.sql.catalog.embedded.warehouse": (spark_local_dir / "embedded-warehouse").as_uri(),
    })
    session = build_spark(settings)
    yield session
    session.stop()


@pytest.fixture()
def unique_name() -> Callable[[str], str]:
    """Factory for unique identifiers (namespaces, tables, consumer groups)."""
    return lambda prefix="x": f"{prefix}_{uuid.uuid4().hex[:10]}"


# Parallel runs (``./dev test`` uses pytest-xdist with ``--dist loadgroup``) put the tests of one
# group on one worker, in order, and hand out the biggest groups first:
# - the session-scoped ``spark`` fixture is a JVM of a few GB per worker that starts it: its users
#   go to five lanes (five such JVMs at most), four for the lakehouse jobs' tests, one for the rest;
# - the standalone cluster's tests kill and restart its workers, which no other cluster test may see;
# - the Airflow DAG runs (spark-submit per task) form one lane of their own;
# - an explicit ``xdist_group`` mark (the compat modules that share one program run) is kept.
# pytest 9 no longer lets xdist 3.8 tag a node id with its group, so the workers write the groups
# they computed at collection to a file of this run and the controller's scheduler reads it.
# The work is handed out in collection order (``--no-loadscope-reorder``), which
# ``pytest_collection_modifyitems`` sorts by expected cost: the Spark, cluster and Airflow lanes
# first (each the first unit of its own worker: they are the critical path), then the long
# single tests, then the rest, which the other workers share. xdist's default order (by test
# count) started the long single tests last, after every group, and they formed a tail.
_GROUP_BY_PATH = {"tests/integration/cluster/": "spark-cluster", "tests/integration/airflow/": "airflow"}
_LAKEHOUSE = "tests/integration/lakehouse/"
# The lakehouse jobs' tests in four lanes of about equal CPU (the figures: CPU-s of each file's
# process tree in a whole run): the two heaviest lanes finished a minute after every other worker
# was done, the machine partly idle meanwhile (compact + S3 + quality 171, register + crash + ... 145,
# against 81 and 86 for the others).
_SPARK_GROUPS = {
    f"{_LAKEHOUSE}test_lakehouse_compact.py": "spark-lakehouse-a",  # 136
    **{f"{_LAKEHOUSE}{name}": "spark-lakehouse-b" for name in (  # 66 + 39 + 8
        "test_lakehouse_crash.py", "test_lakehouse_register.py", "test_register_with_sink.py")},
    **{f"{_LAKEHOUSE}{name}": "spark-lakehouse-d" for name in (  # 46 + 28 + 24 + 8
        "test_lakehouse_cli.py", "test_window_recompute.py", "test_audit_publish.py",
        "test_register_concurrent_s3.py")},
    _LAKEHOUSE: "spark-lakehouse-c",  # incremental windows 64, S3 22, quality 13, any new file
}
_SPARK_DEFAULT_GROUP = "spark-session"
_RUN_FIRST = ("tests/e2e/", "tests/integration/airflow/", "tests/integration/peers/",
              "tests/integration/foundation/test_services_manager.py", "tests/compat/windows/test_window_agg.py")


def _xdist_group(item: pytest.Item) -> str | None:
    explicit = [str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")]
    if explicit:
        return "_".join(sorted(set(explicit)))
    path = str(item.path).removeprefix(str(item.config.rootpath) + os.sep)
    group = next((g for prefix, g in _GROUP_BY_PATH.items() if path.startswith(prefix)), None)
    if group is None and "spark" in getattr(item, "fixturenames", ()):
        group = next((g for prefix, g in _SPARK_GROUPS.items() if path.startswith(prefix)), _SPARK_DEFAULT_GROUP)
    return group


def _cost_rank(item: pytest.Item, path: str) -> int:
    """0 for the tests of a long lane (Spark, cluster, Airflow), 1 for long single tests, 2 otherwise."""
    group = _xdist_group(item)
    if group is not None and group.startswith(("spark", "airflow")):
        return 0
    return 1 if path.startswith(_RUN_FIRST) else 2


def _groups_file() -> Path:
    return services.local_dir() / f"tests-groups-{os.environ['STREAMLAKE_TEST_RUN']}.json"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = str(config.rootpath) + os.sep
    items.sort(key=lambda item: _cost_rank(item, str(item.path).removeprefix(root)))  # stable within a rank
    if _is_xdist_worker(config) and config.getvalue("loadgroup"):
        groups = {item.nodeid: group for item in items if (group := _xdist_group(item))}
        target = _groups_file()
        tmp = target.with_name(f"{target.name}.{os.getpid()}")
        tmp.write_text(json.dumps(groups))
        tmp.replace(target)  # every worker writes the same map; the last complete one wins


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent under '-p no:xdist'
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # type: ignore[no-untyped-def]
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """``loadgroup`` with the groups the workers wrote (:func:`_xdist_group`)."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = json.loads(_groups_file().read_text()) if _groups_file().exists() else {}
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_xdist_worker(session.config):
        return
    _groups_file().unlink(missing_ok=True)
    notes = _started_file()
    if notes.exists():
        started = list(dict.fromkeys(notes.read_text().split()))
        notes.unlink()
        if started:
            services.down(started)


def pytest_configure(config: pytest.Config) -> None:
    # Spark and the tests share UTC so hour partitions and timestamps agree everywhere.
    os.environ.setdefault("TZ", "UTC")
    # The tests' Spark drivers (the session fixture, every spark-submit and CLI job they start) live
    # seconds to minutes on tiny data: the C2 compiler and parallel GC threads cost ~25% of their
    # CPU and never pay back, and the suite is CPU-bound on 2 cores; class loading is ~40% of a
    # short driver, so they map the class-data archive ./dev test builds (infra/local/spark_cds.py).
    # Same plans, same results.
    os.environ.setdefault("SPARK_SUBMIT_OPTS", spark_cds.DRIVER_JVM_OPTS)
    os.environ.update(spark_cds.jvm_env())
    # One id per run, set by the controller before pytest-xdist starts its workers (they inherit it).
    if not _is_xdist_worker(config):
        os.environ["STREAMLAKE_TEST_RUN"] = f"{os.getpid()}-{uuid.uuid4().hex[:6]}"

"""Spark session builder: local mode by default, Iceberg and Delta configured, jars offline.

Every Spark entry point (jobs, the ``lakehouse`` CLI, tests) builds its session here so that the
catalogs, the extensions and the small-machine settings are the same everywhere.

Example::

    from lakehouse.session import SparkSettings, build_spark
    spark = build_spark(SparkSettings.from_env())
    spark.sql("SELECT count(*) FROM lake.db.sensor_readings").show()

Catalogs:

* ``lake`` (name configurable): an Iceberg catalog. With ``ICEBERG_REST_URI`` set it is a REST
  catalog (optionally with a bearer token or an OAuth2 credential); otherwise it is the embedded
  default, a Hadoop-type catalog in a local warehouse folder that needs no server.
* ``spark_catalog``: Delta's catalog, so ``delta.`/path``` and Delta tables work.

The jars (Iceberg and Delta runtimes, S3A) come from the local jar cache filled once by
``infra/jars/fetch.sh``; nothing is downloaded when a session starts.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stream_edge.lake.s3_settings import S3Settings

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
DELTA_EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
SPARK_JAR_SET = "spark"


class SparkSetupError(RuntimeError):
    """The Spark session cannot be configured (missing jars, bad settings)."""


def jar_cache() -> Path:
    """The local jar cache (``$STREAMLAKE_JAR_CACHE`` or ``~/.cache/streaming-lakehouse/jars``)."""
    env = os.environ.get("STREAMLAKE_JAR_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "streaming-lakehouse" / "jars"


#: the driver's log configuration for local sessions: warnings on stderr, expected conditions
#: (no native Hadoop library; a Hadoop catalog's missing version hint) quiet
LOG4J2_CONFIG = Path(__file__).with_name("log4j2-jobs.properties")

#: small-machine settings for local runs (``local[...]`` masters) only: on a cluster the platform's
#: defaults and spark-submit's ``--conf`` decide. Adaptive execution is off there: with 2 shuffle
#: partitions it has nothing to coalesce, yet it runs every shuffle stage as a Spark job of its own
#: and re-plans after each (an incremental windows run at 10M rows: 1.4-2.5 s -> 1.1-1.8 s per
#: increment, the full run no slower; bench/README.md)
LOCAL_DEFAULTS = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": f'-Duser.timezone=UTC "-Dlog4j2.configurationFile={LOG4J2_CONFIG}"',
}


#: settings of every job's session, local or cluster (spark-submit's ``--conf`` still wins): the
#: jobs build their plans from hundreds of DataFrame calls, and PySpark's DataFrame debugging (the
#: Python call site sent with each call, for the query context of error messages) costs ~10 Py4J
#: round trips per call (``F.col``: 1.36 -> 0.38 ms); a job's errors name the job, table and step
#: Spark's default redaction pattern plus ``credential``: ``spark.sql.catalog.<name>.credential``
#: (an Iceberg REST ``id:secret``) is masked in the UI, event logs and spark-submit's output
SPARK_REDACTION_REGEX = "(?i)secret|password|token|access[.]key|credential"
#: Spark's window operator keeps a group's rows in a plain array up to 4,096 rows, then in a
#: spillable sorter buffer that costs more per row; the windows job's sliding plan buffers a key's
#: records (10,000 per key in bench/window_recompute_bench.py: 10M rows, 7.6 -> 6.9 s to Spark's
#: noop sink). 65,536 rows of ~100 bytes are ~6 MiB per task, beyond which Spark still spills.
JOB_DEFAULTS = {
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    "spark.redaction.regex": SPARK_REDACTION_REGEX,
    "spark.sql.windowExec.buffer.in.memory.threshold": "65536",
}


def cached_spark_jars() -> list[str]:
    """Local paths of the cached Iceberg, Delta and S3A jars (empty when never fetched)."""
    return sorted(str(p) for p in (jar_cache() / SPARK_JAR_SET).glob("*.jar"))


def spark_jars() -> list[str]:
    """Local paths of the Iceberg, Delta and S3A jars; a clear error if they were never fetched."""
    folder = jar_cache() / SPARK_JAR_SET
    jars = sorted(str(p) for p in folder.glob("*.jar"))
    if not jars:
        raise SparkSetupError(
            f"no Spark runtime jars in {folder}; fetch them once with "
            f"'infra/jars/fetch.sh {SPARK_JAR_SET}' (or './dev bootstrap')"
        )
    return jars


@dataclass
class SparkSettings:
    """Everything that varies between a laptop and production, read from the environment.

    ==========================  =============================================================
    environment variable        meaning
    ==========================  =============================================================
    LAKEHOUSE_SPARK_MASTER      Spark master, e.g. ``spark://host:7077`` (wins over SPARK_MASTER)
    SPARK_MASTER                Spark master (default: spark-submit's ``--master``, else ``local[2]``)
    LAKEHOUSE_CATALOG           name of the Iceberg catalog in SQL (default ``lake``)
    ICEBERG_REST_URI            REST catalog URI; unset = embedded local catalog
    ICEBERG_WAREHOUSE           warehouse location (REST: optional; embedded: local folder)
    ICEBERG_TOKEN               bearer token for the REST catalog (never logged)
    ICEBERG_CREDENTIAL          OAuth2 ``client_id:client_secret`` for the REST catalog
    AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, S3_ENDPOINT
                                S3-compatible endpoint for ``s3a://`` (MinIO, moto, ...), the
                                first set wins (``stream_edge.lake.s3_settings``, as the edge)
    AWS_ACCESS_KEY_ID/...       S3 credentials (standard AWS variables, session token included)
    LAKEHOUSE_LOCAL_DIR         where the embedded warehouse lives (default ``./.local/lakehouse``)
    SPARK_REMOTE                ``sc://host:port``: run over Spark Connect (as ``--remote``)
    ==========================  =============================================================
    """

    master: str | None = None  # None: spark-submit's --master, else local[2]
    app_name: str = "lakehouse"
    catalog_name: str = "lake"
    rest_uri: str | None = None
    warehouse: str | None = None
    token: str | None = field(default=None, repr=False)
    credential: str | None = field(default=None, repr=False)
    s3_endpoint: str | None = None
    s3_access_key: str | None = field(default=None, repr=False)
    s3_secret_key: str | None = field(default=None, repr=False)
    s3_session_token: str | None = field(default=None, repr=False)
    local_dir: str = ".local/lakehouse"
    remote: str | None = None  # sc://host:port: run over Spark Connect
    extra_conf: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> "SparkSettings":
        env = dict(os.environ if env is None else env)
        s3 = S3Settings.from_env(env)
        settings = cls(
            master=env.get("LAKEHOUSE_SPARK_MASTER") or env.get("SPARK_MASTER") or None,
            catalog_name=env.get("LAKEHOUSE_CATALOG", "lake"),
            rest_uri=env.get("ICEBERG_REST_URI") or None,
            warehouse=env.get("ICEBERG_WAREHOUSE") or None,
            token=env.get("ICEBERG_TOKEN") or None,
            credential=env.get("ICEBERG_CREDENTIAL") or None,
            s3_endpoint=s3.endpoint_url,
            s3_access_key=s3.access_key,
            s3_secret_key=s3.secret_key,
            s3_session_token=s3.session_token,
            local_dir=env.get("LAKEHOUSE_LOCAL_DIR", ".local/lakehouse"),
            remote=env.get("SPARK_REMOTE") or None,
        )
        for key, value in overrides.items():
            if not hasattr(settings, key):
                raise SparkSetupError(f"unknown Spark setting {key!r}")
            setattr(settings, key, value)
        return settings

    def conf(self) -> dict[str, str]:
        """The Spark configuration these settings stand for (contains secrets: never log it).

        Catalogs and extensions only; :data:`LOCAL_DEFAULTS` and the runtime jars
        (:func:`runtime_jar_conf`) are added by :func:`build_spark`, which knows the master."""
        cat = f"spark.sql.catalog.{self.catalog_name}"
        conf = {
            "spark.sql.extensions": f"{ICEBERG_EXTENSIONS},{DELTA_EXTENSIONS}",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            cat: "org.apache.iceberg.spark.SparkCatalog",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": str(Path(self.local_dir, "spark-warehouse").resolve()),
        }
        if self.rest_uri:
            conf[f"{cat}.type"] = "rest"
            conf[f"{cat}.uri"] = self.rest_uri
            if self.warehouse:
                conf[f"{cat}.warehouse"] = self.warehouse
            if self.token:
                conf[f"{cat}.token"] = self.token
            if self.credential:
                conf[f"{cat}.credential"] = self.credential
                oauth_uri = os.environ.get("ICEBERG_OAUTH2_SERVER_URI")
                if oauth_uri:
                    conf[f"{cat}.oauth2-server-uri"] = oauth_uri
        else:
            conf[f"{cat}.type"] = "hadoop"
            conf[f"{cat}.warehouse"] = self.warehouse or Path(self.local_dir, "warehouse").resolve().as_uri()
        conf.update(s3a_conf(S3Settings(endpoint_url=self.s3_endpoint, access_key=self.s3_access_key,
                                        secret_key=self.s3_secret_key, session_token=self.s3_session_token)))
        if self.s3_endpoint and self.rest_uri:
            # With a custom S3 endpoint, a REST catalog's tables do their file IO through Hadoop's
            # S3A, configured above (the same client Spark reads with). Iceberg's own S3FileIO
            # would need the AWS SDK's Apache 5 HTTP client, which the cached SDK bundle lacks.
            conf[f"{cat}.io-impl"] = "org.apache.iceberg.hadoop.HadoopFileIO"
        conf.update(self.extra_conf)
        return conf


def jars_on_platform_classpath(jars: list[str], env: dict[str, str] | None = None) -> bool:
    """True when ``SPARK_DIST_CLASSPATH`` (how Hadoop-free Spark distributions and platform
    images extend Spark's class path) already lists every one of ``jars``: nothing to add.

    >>> jars_on_platform_classpath(["/j/a.jar"], {"SPARK_DIST_CLASSPATH": "/j/a.jar:/j/b.jar"})
    True
    >>> jars_on_platform_classpath(["/j/a.jar", "/j/c.jar"], {"SPARK_DIST_CLASSPATH": "/j/a.jar"})
    False
    """
    listed = set((os.environ if env is None else env).get("SPARK_DIST_CLASSPATH", "").split(":"))
    return bool(jars) and all(jar in listed for jar in jars)


def runtime_jar_conf(local: bool, jars: list[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """Where the Iceberg/Delta/S3A jars go for a session on a ``local`` master or a cluster.

    Local: on the driver's class path. The executor is the driver's own JVM, and ``spark.jars``
    would have it copy every jar (~670 MB with the AWS SDK bundle) into the session's work folder
    at its first task. A cluster: ``spark.jars``, which ships them to the executors. Nothing when
    there are no cached jars or the platform's class path already has them.

    >>> runtime_jar_conf(True, ["/j/a.jar", "/j/b.jar"], {})
    {'spark.driver.extraClassPath': '/j/a.jar:/j/b.jar'}
    >>> runtime_jar_conf(False, ["/j/a.jar", "/j/b.jar"], {})
    {'spark.jars': '/j/a.jar,/j/b.jar'}
    >>> runtime_jar_conf(True, ["/j/a.jar"], {"SPARK_DIST_CLASSPATH": "/j/a.jar"})
    {}
    """
    if not jars or (local and jars_on_platform_classpath(jars, env)):
        return {}
    return {"spark.driver.extraClassPath": ":".join(jars)} if local else {"spark.jars": ",".join(jars)}


def write_spark_defaults(spark_home: Path | None = None) -> Path:
    """Record the runtime jars in ``$SPARK_HOME/conf/spark-defaults.conf``.

    Under ``spark-submit`` the driver JVM starts before any Python runs, so jars set by
    :func:`build_spark` come too late for the driver; putting them on the driver's class path in
    spark-defaults makes a plain ``spark-submit pipelines/jobs/<job>.py`` work. On a cluster,
    :func:`build_spark` adds them as ``spark.jars`` for the executors (or pass ``--jars``, as the
    Airflow DAG does). ``./dev bootstrap`` calls this for the project's own pyspark.
    """
    if spark_home is None:
        import pyspark

        spark_home = Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)
    conf = Path(spark_home) / "conf" / "spark-defaults.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    lines = [line for line in (conf.read_text().splitlines() if conf.exists() else [])
             if not line.startswith(("spark.jars ", "spark.driver.extraClassPath ", "spark.redaction.regex "))]
    lines.append(f"spark.driver.extraClassPath {':'.join(spark_jars())}")
    lines.append(f"spark.redaction.regex {SPARK_REDACTION_REGEX}")  # read before any Python runs
    tmp = conf.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(conf)
    return conf


#: the classes whose absence means the runtime jars are missing from the driver's class path
_RUNTIME_CLASSES = ("org.apache.iceberg.spark", "io.delta.sql", "io.delta.tables", "org.apache.hadoop.fs.s3a")


def missing_jars_hint(message: str) -> str | None:
    """The fix for a failure caused by the Iceberg/Delta/S3A jars missing from the driver (Spark
    reports a catalog plugin, an extension or a file system class it cannot find); None otherwise.

    Spark starts without them and fails at the first statement that needs one, so the jobs add
    this hint to that error instead of probing the driver's class loader up front.

    >>> missing_jars_hint("[CATALOG_PLUGIN_CLASS_NOT_FOUND] Cannot find catalog plugin class for "
    ...                   "catalog 'lake': org.apache.iceberg.spark.SparkCatalog.")[:47]
    'the Iceberg/Delta/S3A runtime jars are missing '
    >>> missing_jars_hint("Table or view not found: lake.db.t") is None
    True
    """
    lowered = message.lower()
    if not any(cls in message for cls in _RUNTIME_CLASSES):
        return None
    if not any(sign in lowered for sign in ("not found", "notfound", "cannot find", "no filesystem")):
        return None
    return ("the Iceberg/Delta/S3A runtime jars are missing from the Spark driver's class path: run spark-submit "
            f"with --jars {','.join(cached_spark_jars()) or '<the Iceberg, Delta and S3A runtime jars>'} (or run "
            "'./dev bootstrap', which lists them in the project's spark-defaults.conf)")


def _submitted_conf() -> dict[str, str]:
    """The configuration spark-submit gave the driver JVM (``--conf``, ``--master``, the
    platform's spark-defaults.conf); empty for a plain Python process, whose JVM starts later."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM
    return dict(SparkConf().getAll())


def default_master() -> str | None:
    """``local[2]`` for a plain Python process; None under spark-submit, whose ``--master`` (from
    Airflow's Spark connection, say) must win over any default set here."""
    return None if "PYSPARK_GATEWAY_PORT" in os.environ else "local[2]"


def _loopback_cluster(master: str) -> bool:
    """A standalone master on this machine (``spark://127.0.0.1:...``): its executors share our disk."""
    return master.startswith(("spark://127.0.0.1:", "spark://localhost:"))


def cluster_conf(env: dict[str, str] | None = None) -> dict[str, str]:
    """Settings for a standalone cluster: executor size from ``LAKEHOUSE_EXECUTOR_MEMORY`` (default
    1g) and ``LAKEHOUSE_EXECUTOR_CORES`` (default 1); ``settings.extra_conf`` still wins."""
    env = dict(os.environ if env is None else env)
    return {
        "spark.executor.memory": env.get("LAKEHOUSE_EXECUTOR_MEMORY", "1g"),
        "spark.executor.cores": env.get("LAKEHOUSE_EXECUTOR_CORES", "1"),
    }


def session_conf(settings: SparkSettings, master: str | None, submitted: dict[str, str]) -> dict[str, str]:
    """What :func:`build_spark` gives the session builder for ``master`` (None: spark-submit's):
    the catalogs, :data:`JOB_DEFAULTS`, the runtime jars, :data:`LOCAL_DEFAULTS` on a local master,
    the executor size on a standalone cluster; minus what spark-submit already set (``submitted``:
    its ``--conf`` and the platform's spark-defaults win), except ``settings.extra_conf``.

    >>> on_cluster = session_conf(SparkSettings(), "spark://10.0.0.5:7077", {})
    >>> on_cluster["spark.python.sql.dataFrameDebugging.enabled"], "spark.sql.shuffle.partitions" in on_cluster
    ('false', False)
    >>> session_conf(SparkSettings(), "local[2]", {})["spark.sql.shuffle.partitions"]
    '2'
    >>> given = {"spark.master": "yarn", "spark.python.sql.dataFrameDebugging.enabled": "true"}
    >>> "spark.python.sql.dataFrameDebugging.enabled" in session_conf(SparkSettings(), None, given)
    False
    """
    conf = settings.conf()
    local = (master or submitted.get("spark.master", "")).startswith("local")
    conf = {**JOB_DEFAULTS, **runtime_jar_conf(local, cached_spark_jars()), **conf}
    if local:
        conf = dict(LOCAL_DEFAULTS, **conf)
    if (master or "").startswith("spark://"):
        # Standalone cluster: executors get the runtime jars from spark.jars (served by the driver);
        # keep the application to the cluster's size unless told otherwise.
        conf = dict(cluster_conf(), **conf)
        if (_loopback_cluster(master or "") and "spark.jars" not in settings.extra_conf
                and "PYSPARK_GATEWAY_PORT" not in os.environ):
            # The workers share this disk: driver and executors read the jars in place from the
            # cache (class paths) instead of copying ~670 MB into every executor's work dir.
            classpath = ":".join(spark_jars())
            conf.update({"spark.jars": "", "spark.driver.extraClassPath": classpath,
                         "spark.executor.extraClassPath": classpath})
    # spark-submit's --conf (and the platform's spark-defaults) win over our defaults; only
    # settings.extra_conf, set in code, wins over them
    return {key: value for key, value in conf.items() if key not in submitted or key in settings.extra_conf}


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no driver JVM in this process)."""
    try:
        from pyspark.sql.connect.session import SparkSession as ConnectSession
    except ImportError:  # pragma: no cover - pyspark without the connect extra
        return False
    return isinstance(spark, ConnectSession)


#: settings a Spark Connect server fixes when it starts (``infra/local/spark_connect.py``); a client
#: cannot change them (Spark refuses: CANNOT_MODIFY_STATIC_CONFIG)
CONNECT_SERVER_CONF = ("spark.sql.extensions", "spark.sql.warehouse.dir", "spark.sql.catalog.spark_catalog",
                       "spark.python.sql.dataFrameDebugging.enabled")


def connect_session(remote: str, settings: SparkSettings) -> "SparkSession":
    """A Spark Connect session at ``remote`` (``sc://host:port``), with the catalogs of ``settings``
    set on it: catalog settings are session settings the server takes at runtime; the extensions
    and jars are the server's (``./dev services up spark-connect`` starts one with them)."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.remote(remote).getOrCreate()
    for key, value in settings.conf().items():
        if key.startswith("spark.hadoop.") or key in CONNECT_SERVER_CONF:
            continue  # static: the server's own, set when it started
        spark.conf.set(key, value)
    return spark


def build_spark(settings: SparkSettings | None = None) -> "SparkSession":
    """Create (or return the active) Spark session configured by ``settings``: a Spark Connect
    session when ``settings.remote`` (``SPARK_REMOTE`` or ``--remote``) names a server."""
    from pyspark.sql import SparkSession

    settings = settings or SparkSettings.from_env()
    if settings.remote:
        return connect_session(settings.remote, settings)
    active = SparkSession.getActiveSession()
    if active is not None:
        # Several jobs in one process (the demo, tests): reuse the session as getOrCreate would,
        # setting what can change at runtime, without its "Using an existing Spark session" warning.
        for key, value in settings.conf().items():
            if active.conf.isModifiable(key):
                active.conf.set(key, value)
        return active
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(settings.app_name)
    master = settings.master or default_master()
    if master:
        builder = builder.master(master)
    if (master or "").startswith("local") or _loopback_cluster(master or ""):
        # Python workers (pandas UDFs of the windows job) run on this machine: the driver's own
        # interpreter has the project's packages; a bare "python3" from PATH may not.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in session_conf(settings, master, _submitted_conf()).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "WARN"))
    return spark


def s3a_conf(s3: S3Settings) -> dict[str, str]:
    """Hadoop S3A settings for a store (endpoint, path-style access, keys, a session token).

    One definition for every Spark the project starts (jobs, the Spark Connect server).

    >>> s3a_conf(S3Settings(endpoint_url="http://127.0.0.1:9"))["spark.hadoop.fs.s3a.endpoint"]
    'http://127.0.0.1:9'
    """
    conf: dict[str, str] = {}
    if s3.endpoint_url:
        conf.update({
            "spark.hadoop.fs.s3a.endpoint": s3.endpoint_url,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(s3.endpoint_url.startswith("https")).lower(),
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        })
    if s3.access_key and s3.secret_key:
        conf["spark.hadoop.fs.s3a.access.key"] = s3.access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = s3.secret_key
        if s3.session_token:
            conf["spark.hadoop.fs.s3a.session.token"] = s3.session_token
            conf["spark.hadoop.fs.s3a.aws.credentials.provider"] = \
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    return conf

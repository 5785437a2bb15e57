"""A class-data-sharing archive (JDK AppCDS) for the local Spark driver JVMs of the test suite.

The suite starts dozens of short Spark drivers (the lanes' sessions, every ``spark-submit`` and
``lakehouse`` job a test runs, the demo, the Airflow tasks), and each one loads and verifies
~20,000 classes from Spark's, Iceberg's and Delta's jars before it runs anything. An archive of
those classes, dumped once by one representative run, is mapped by every later JVM instead: a
session that creates, fills and reads one Iceberg table costs ~7.5 CPU-s instead of ~13.3 on this
2-core machine (measured with ``/usr/bin/time`` on the whole process tree). Same JVM, same jars,
same plans; only class loading is skipped.

JDK 17 maps an archive only when the class path is, path for path, the one it was dumped with and
no folder on it holds files. Spark puts its configuration folder first on the class path (where
``./dev bootstrap`` writes the runtime jars into ``spark-defaults.conf``), then
``$SPARK_HOME/jars``, which lives in each checkout's virtual environment. So :func:`jvm_env` gives
the suite's Spark JVMs paths that are the same for every checkout on the machine:

- ``SPARK_HOME``: :func:`stable_spark_home`, pyspark's launcher scripts and jars under the
  project's cache (the jars hard-linked: no copy, the same size and time stamp the JVM checks;
  without pyspark's Python zips: its Python processes import the installed pyspark);
- ``SPARK_CONF_DIR``: an empty folder;
- ``SPARK_DIST_CLASSPATH``: the runtime jars (as Hadoop-free Spark distributions extend the class
  path; :func:`lakehouse.session.runtime_jar_conf` then adds nothing for local masters);
- ``SPARK_SUBMIT_OPTS``: ``-XX:SharedArchiveFile=...`` with the CDS log lines off: a JVM that
  starts before the archive exists, or whose class path differs (a cluster driver with its own),
  runs without it.

``./dev test`` builds the archive while the services start (``python -m infra.local.spark_cds
build``; ~60 CPU-s, paid back after a dozen drivers; built under the tests' load it took six
minutes, and the drivers started meanwhile went without). It lives in the project's cache
(``~/.cache/streaming-lakehouse/spark-cds/``) under a name that hashes the JDK (and its own base
archive), pyspark's jars, the runtime jars and the drivers' settings (:data:`DRIVER_JVM_OPTS`;
the workload runs in both SQL modes, see :func:`workload`), so a change to any of them builds a
new one, and every checkout on the machine (a clean clone, a CI workspace) reuses the one built
before.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: SQL settings of the suite's Spark drivers, as JVM system properties (a SparkConf takes every
#: ``-Dspark.*`` as a default; builder options and ``--conf`` still win). On the suite's tiny
#: tables, re-planning after every stage (adaptive execution) and generating and compiling Java
#: code for every query cost ~30% of a lakehouse test's CPU and never pay back. The plans compute
#: the same rows: Spark evaluates every expression interpreted or generated alike (its own tests
#: run both). One task per stage (shuffle partitions, default parallelism, Delta's snapshot
#: partitions) for the same reason: each task pays for the stage's deserialized task binary and
#: per-partition set-up, and the tables hold tens of rows (the session fixture's one task per stage
#: took a whole run's lane drivers from 552 to 439 CPU-s, their Python workers from 130 to 63;
#: process accounting, CONTRIBUTING.md). A plain Python job's builder
#: defaults (``LOCAL_DEFAULTS``) win over these; under spark-submit they count as submitted.
#: Deployments keep Spark's defaults; the cluster and Airflow tests run with them.
#: The one-task-per-stage part, also the ``spark`` fixture's session options (its builder
#: defaults would win over the system properties).
ONE_TASK_PER_STAGE = {"spark.sql.shuffle.partitions": "1", "spark.default.parallelism": "1",
                      "spark.databricks.delta.snapshotPartitions": "1"}
DRIVER_SQL_DEFAULTS = " ".join(
    ["-Dspark.sql.adaptive.enabled=false -Dspark.sql.codegen.wholeStage=false "
     "-Dspark.sql.codegen.factoryMode=NO_CODEGEN"] + [f"-D{key}={value}" for key, value in ONE_TASK_PER_STAGE.items()])
#: JIT, GC and SQL settings of the suite's Spark drivers: they live seconds to minutes on tiny
#: data, where the C2 compiler and parallel GC threads cost ~25% of their CPU and never pay back.
#: No code-cache flushing: a lane's driver runs one test file after another, and flushing drops
#: the code of the previous file's plans that C1 then compiles again for the next (a driver over
#: test_lakehouse_compact.py, four runs alternating: 131 and 109 CPU-s with flushing, 111 and 94
#: without; this machine drifts by about as much between runs, so ~5-10%; C1's code of a whole
#: run fits the default 240 MB cache).
DRIVER_JVM_OPTS = f"-XX:TieredStopAtLevel=1 -XX:-UseCodeCacheFlushing -XX:+UseSerialGC {DRIVER_SQL_DEFAULTS}"
#: a JVM that cannot use the archive says nothing and runs without it
_QUIET_CDS = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def deployed_jvm_opts(opts: str) -> str:
    """``opts`` (a ``SPARK_SUBMIT_OPTS``) without :data:`DRIVER_SQL_DEFAULTS`: Spark's own SQL
    defaults, as a deployment runs (and nothing an executor's ``extraJavaOptions`` may not hold).

    >>> deployed_jvm_opts(f"-Xss4m {DRIVER_SQL_DEFAULTS} -XX:+UseSerialGC")
    '-Xss4m -XX:+UseSerialGC'
    """
    return " ".join(flag for flag in opts.split() if not flag.startswith("-Dspark."))


def cache_dir() -> Path:
    """The machine-wide home of the archives, next to the jar cache (shared by every checkout)."""
    from lakehouse.session import jar_cache

    return jar_cache().parent / "spark-cds"


def _file_key(paths: list[str]) -> str:
    key = hashlib.sha256()
    for path in paths:
        stat = os.stat(path)
        key.update(f"{path}:{stat.st_size}:{int(stat.st_mtime)}\n".encode())
    return key.hexdigest()[:16]


def stable_spark_home() -> Path:
    """pyspark's launcher scripts, Python libraries and jars at a path that does not depend on the checkout.

    The archive records the class path it was dumped with; with each checkout's own
    ``.venv/.../pyspark/jars`` on it, every clean clone would dump its own (a minute of CPU). The
    jars are hard-linked (copied across file systems), the scripts copied; built under a temporary
    name and renamed, so concurrent test workers never see half of it.
    """
    import pyspark

    source = Path(pyspark.__file__).parent
    jars = sorted(str(p) for p in (source / "jars").glob("*.jar"))
    # named by version and jar names and sizes, not paths or times: every checkout of the same
    # pins maps to one home (and so to one archive), however its environment was installed
    names = hashlib.sha256("".join(f"{Path(j).name}:{os.path.getsize(j)}\n" for j in jars).encode())
    names.update(b"without-python-zips")
    home = cache_dir() / f"spark-home-{pyspark.__version__}-{names.hexdigest()[:12]}"
    if (home / "jars").is_dir():
        return home
    home.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
    partial.chmod(0o755)  # mkdtemp's 0700 would hide it from a service that runs as another user
    shutil.copytree(source / "bin", partial / "bin")
    # Without python/lib's pyspark.zip and py4j zip. Spark puts both ahead of the installed
    # packages on the path of every Python process it starts (a submitted job's driver, the Python
    # workers), where the zip importer compiles pyspark from source in each process (import
    # pyspark.sql: 0.95 CPU-s, 0.33 from the installed package) and, on Python 3.11, re-reads a
    # zip's whole directory in pure Python whenever import caches are invalidated, which a worker
    # does before every task (most of the workers' CPU in the suite). A path entry that does not
    # exist is skipped, so these processes import the same pyspark and py4j from the environment.
    shutil.copytree(source / "python", partial / "python", ignore=shutil.ignore_patterns("__pycache__", "*.zip"))
    (partial / "jars").mkdir()
    for jar in jars:
        try:
            os.link(jar, partial / "jars" / Path(jar).name)
        except OSError:
            shutil.copy2(jar, partial / "jars")
    try:
        partial.rename(home)
    except OSError:  # another worker won the race: its copy is the same
        shutil.rmtree(partial, ignore_errors=True)
    return home


def conf_dir() -> Path:
    """The empty Spark configuration folder of the suite's JVMs (created on first use)."""
    path = cache_dir() / "conf"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _java() -> str:
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) \
        if os.environ.get("JAVA_HOME") else shutil.which("java")
    return os.path.realpath(java or "java")


def archive_path(runtime_jars: list[str]) -> Path:
    """Where the archive for this JDK, this pyspark and these runtime jars lives."""
    java = _java()
    # a dynamic archive is tied to the JDK's base archive too (regenerated by "java -Xshare:dump")
    base = [str(p) for p in Path(java).parents[1].glob("lib/server/classes.jsa")]
    spark_jars = sorted(str(p) for p in (stable_spark_home() / "jars").glob("*.jar"))
    key = _file_key([java, *base, *spark_jars, *runtime_jars])
    # the classes a run loads depend on its settings and on the workload (both modes since v2)
    settings = hashlib.sha256(f"{key}:{DRIVER_JVM_OPTS}:workload-v2".encode()).hexdigest()[:16]
    return cache_dir() / f"spark-{settings}.jsa"


def jvm_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables that make the suite's Spark drivers share the archive (see the module doc);
    empty when the runtime jars were never fetched."""
    from lakehouse.session import cached_spark_jars

    base = dict(os.environ if base is None else base)
    jars = cached_spark_jars()
    if not jars:
        return {}
    opts = base.get("SPARK_SUBMIT_OPTS", DRIVER_JVM_OPTS)
    archive = archive_path(jars)
    # Only an archive that exists: a JVM told to map a missing one maps none, not even the JDK's
    # own (a short driver's JVM: 4.3 CPU-s with the archive, 8.2-9.3 with the JDK's only, 9.8-10.0
    # told to map a missing one).
    if "SharedArchiveFile" not in opts and archive.exists():
        opts = f"{opts} -XX:SharedArchiveFile={archive} {_QUIET_CDS}"
    return {"SPARK_HOME": str(stable_spark_home()), "SPARK_CONF_DIR": str(conf_dir()),
            "SPARK_DIST_CLASSPATH": ":".join(jars), "SPARK_SUBMIT_OPTS": opts}


def build(force: bool = False) -> Path | None:
    """Dump the archive with one representative local Spark run; returns its path (None when the
    jars are missing). Written under a temporary name and renamed: a JVM never maps half of one."""
    from lakehouse.session import cached_spark_jars

    jars = cached_spark_jars()
    if not jars:
        return None
    target = archive_path(jars)
    if target.exists() and not force:
        return target
    for old in target.parent.glob("spark-*.jsa"):  # archives of other jars or JDKs
        old.unlink(missing_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    env = dict(os.environ, **jvm_env({}), TZ="UTC")
    env["SPARK_SUBMIT_OPTS"] = f"{DRIVER_JVM_OPTS} -XX:ArchiveClassesAtExit={partial} {_QUIET_CDS}"
    with tempfile.TemporaryDirectory(prefix="spark-cds-") as scratch:
        env["LAKEHOUSE_LOCAL_DIR"] = scratch
        proc = subprocess.run([sys.executable, "-m", "infra.local.spark_cds", "workload"], env=env,
                              capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the archive's Spark run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    partial.replace(target)
    return target


def workload() -> None:
    """What the archive holds: the classes of a local session that creates, fills, merges into and
    reads Iceberg and Delta tables and runs a window query (the suite's jobs in miniature), with
    the suite's SQL settings and again with Spark's defaults (the cluster and Airflow tests' drivers
    plan adaptively and generate code: other classes)."""
    from lakehouse.session import SparkSettings, build_spark

    spark = build_spark(SparkSettings.from_env(app_name="spark-cds"))
    spark.sql("CREATE TABLE lake.cds.readings (key string, ts bigint, value double) USING iceberg "
              "PARTITIONED BY (key)")
    spark.sql("INSERT INTO lake.cds.readings VALUES ('a', 1, 1.0), ('b', 2, 2.0), ('a', 3, 3.0)")
    deployed = {"spark.sql.adaptive.enabled": "true", "spark.sql.codegen.wholeStage": "true",
                "spark.sql.codegen.factoryMode": "FALLBACK"}
    for settings in ({}, deployed):
        for key, value in settings.items():
            spark.conf.set(key, value)
        spark.sql("MERGE INTO lake.cds.readings t USING (SELECT 'a' AS key, 3 AS ts, 4.0 AS value) s "
                  "ON t.key = s.key AND t.ts = s.ts WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
        spark.sql("SELECT key, ts, avg(value) OVER (PARTITION BY key ORDER BY ts) AS v, "
                  "count(*) OVER (PARTITION BY key) AS n FROM lake.cds.readings").collect()
        spark.sql("SELECT key, sum(value) FROM lake.cds.readings GROUP BY key ORDER BY key").collect()
        delta = Path(os.environ["LAKEHOUSE_LOCAL_DIR"], f"delta-{len(settings)}").as_uri()
        spark.table("lake.cds.readings").write.format("delta").mode("overwrite").save(delta)
        spark.read.format("delta").load(delta).where("value > 1").count()
    spark.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.local.spark_cds", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build", "workload", "env"],
                        help="build: dump the archive unless it exists; env: print the JVM variables")
    parser.add_argument("--force", action="store_true", help="build again even if the archive exists")
    args = parser.parse_args(argv)
    if args.command == "workload":
        workload()
    elif args.command == "env":
        for key, value in jvm_env().items():
            print(f"{key}={value}")
    else:
        t0 = time.monotonic()
        try:
            path = build(args.force)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            # the suite runs without it, only slower
            print(f"spark-cds: no class-data archive ({exc}); Spark JVMs load their classes", file=sys.stderr)
            return 0
        print(f"spark-cds: {path or 'no runtime jars, no archive'} ({time.monotonic() - t0:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

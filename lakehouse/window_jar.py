"""The window loop's jar: ``lakehouse/jvm`` compiled against pyspark's own jars, once per source.

The windows job's native path runs one JVM loop per task (:mod:`lakehouse.window_loop`, Java
sources in ``lakehouse/jvm/streamlake/windows``). ``./dev bootstrap`` compiles them with the
installed JDK's ``javac`` against the jars of the installed pyspark into
``<jar cache>/lakehouse/lakehouse-windows-<digest>.jar``, where the digest covers the sources and
the pyspark version: a rerun finds the jar and does nothing, a changed source or pyspark builds a
new one (jars of other digests are left to the checkouts that use them for a week: every
checkout on the machine shares the cache and lists only its own). :func:`lakehouse.session.cached_spark_jars` lists the jar with the
other runtime jars, so it reaches every class path they reach (the driver's, ``spark.jars`` for a
cluster's executors, spark-defaults, the tests' ``SPARK_DIST_CLASSPATH``). Without a JDK there is
no jar, and the jobs compute the same windows with Spark's own operators.

``DriverWrite.java`` (a small increment's writes from the driver, :mod:`lakehouse.window_tail`)
also compiles against the Iceberg Spark runtime of the jar cache; without that jar it is left
out (the digest says which), and increments write through Spark.

Example::

    python -m lakehouse.window_jar      # build (or find) the jar; prints its path and records it
                                        # in .local/window-loop-jar (read by the Airflow DAG)
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

__all__ = ("JAR_SET", "POINTER", "SOURCE_DIR", "build_jar", "built_jar", "jar_dir", "jar_name", "record_jar",
           "source_digest")

#: the jar cache's folder for the project's own jars (beside the fetched sets)
JAR_SET = "lakehouse"
SOURCE_DIR = Path(__file__).resolve().parent / "jvm"
#: where :func:`main` records the path of this checkout's jar, for processes that cannot compute
#: its digest (the Airflow DAG parses without pyspark): checkouts at other commits share the jar
#: cache, so "the newest jar there" can be another checkout's, with other method signatures
POINTER = SOURCE_DIR.parents[1] / ".local" / "window-loop-jar"
_PREFIX = "lakehouse-windows-"


#: the source that needs the Iceberg Spark runtime to compile (left out without it)
ICEBERG_SOURCE = "streamlake/windows/DriverWrite.java"


def source_digest(sources: dict[str, bytes], pyspark_version: str) -> str:
    """A short digest of the Java sources (relative path -> content) and the pyspark they compile
    against (with the Iceberg runtime's jar names, when it is on the class path).

    >>> source_digest({"a/B.java": b"class B {}"}, "4.1.4") == source_digest({"a/B.java": b"class B {}"}, "4.1.4")
    True
    >>> source_digest({"a/B.java": b"class B {}"}, "4.1.4") == source_digest({"a/B.java": b"class B {}"}, "4.0.0")
    False
    """
    digest = hashlib.sha256(f"pyspark {pyspark_version}\n".encode())
    for name in sorted(sources):
        digest.update(f"{name} {len(sources[name])}\n".encode())
        digest.update(sources[name])
    return digest.hexdigest()[:16]


def jar_name(digest: str) -> str:
    """``lakehouse-windows-<digest>.jar``."""
    return f"{_PREFIX}{digest}.jar"


def _iceberg_jars() -> list[Path]:
    """The Iceberg Spark runtime jar(s) of the jar cache (empty before ``./dev bootstrap`` fetched them)."""
    from lakehouse.session import SPARK_JAR_SET, jar_cache

    return sorted((jar_cache() / SPARK_JAR_SET).glob("iceberg-spark-runtime-*.jar"))


def _sources() -> dict[str, bytes]:
    sources = {str(p.relative_to(SOURCE_DIR)): p.read_bytes() for p in sorted(SOURCE_DIR.rglob("*.java"))}
    if not _iceberg_jars():
        sources.pop(ICEBERG_SOURCE, None)
    return sources


def _pyspark_version() -> str:
    from importlib.metadata import version

    iceberg = " ".join(p.name for p in _iceberg_jars())
    return version("pyspark") + (f" with {iceberg}" if iceberg else "")


def jar_dir() -> Path:
    """``<jar cache>/lakehouse`` (:func:`lakehouse.session.jar_cache`)."""
    from lakehouse.session import jar_cache

    return jar_cache() / JAR_SET


def built_jar() -> Path | None:
    """The jar of the current sources and pyspark when it was built, else None."""
    jar = jar_dir() / jar_name(source_digest(_sources(), _pyspark_version()))
    return jar if jar.is_file() else None


def build_jar(force: bool = False) -> Path:
    """Compile the sources into the jar (unless it exists and not ``force``); its path. Raises
    ``RuntimeError`` naming the fix when there is no ``javac`` or the compile fails."""
    import pyspark

    folder = jar_dir()
    jar = folder / jar_name(source_digest(_sources(), _pyspark_version()))
    if jar.is_file() and not force:
        return jar
    javac = _javac()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".build.lock", "w") as lock:  # one build at a time (parallel set-ups)
        fcntl.flock(lock, fcntl.LOCK_EX)
        if jar.is_file() and not force:
            return jar
        classpath = os.pathsep.join([str(Path(pyspark.__file__).resolve().parent / "jars" / "*"),
                                     *map(str, _iceberg_jars())])
        with tempfile.TemporaryDirectory(prefix="window-jar-") as scratch:
            classes = Path(scratch) / "classes"
            proc = subprocess.run([javac, "-nowarn", "-source", "17", "-target", "17", "-d", str(classes),
                                   "-cp", classpath, *sorted(str(SOURCE_DIR / p) for p in _sources())],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"compiling the window loop ({SOURCE_DIR}) failed:\n{proc.stderr[-4000:]}")
            partial = folder / f".{jar.name}.{os.getpid()}"
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nCreated-By: lakehouse.window_jar\n")
                for path in sorted(classes.rglob("*.class")):
                    archive.write(path, str(path.relative_to(classes)))
            partial.replace(jar)
        _prune(folder, jar)
    return jar


def _prune(folder: Path, keep: Path, days: float = 7.0) -> None:
    """Remove the jars of other sources not built for ``days``: checkouts at other commits share
    the cache (each lists only the jar of its own digest), and a stale one rebuilds its own."""
    import time

    cutoff = time.time() - days * 86_400
    for old in folder.glob(f"{_PREFIX}*.jar"):
        if old != keep and old.stat().st_mtime < cutoff:
            old.unlink(missing_ok=True)


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    javac = shutil.which("javac", path=os.path.join(home, "bin")) if home else None
    javac = javac or shutil.which("javac")
    if javac is None:
        raise RuntimeError("no javac (a JDK 17) found: the windows job's loop jar cannot be built, and the "
                           "jobs compute windows with Spark's own operators; install a JDK and run ./dev bootstrap")
    return javac


def record_jar(jar: Path | None, pointer: Path = POINTER) -> None:
    """Write ``jar``'s path to ``pointer`` (replaced whole, never half written); remove the
    pointer when there is no jar, so that nothing reads a stale one."""
    if jar is None:
        pointer.unlink(missing_ok=True)
        return
    pointer.parent.mkdir(parents=True, exist_ok=True)
    partial = pointer.with_name(f".{pointer.name}.{os.getpid()}")
    partial.write_text(f"{jar}\n")
    partial.replace(pointer)


def main() -> int:
    """Build the jar and record its path (:data:`POINTER`); without a JDK, say so and succeed (the
    jobs fall back to Spark's operators)."""
    try:
        jar = build_jar(force="--force" in sys.argv[1:])
    except RuntimeError as exc:
        print(f"lakehouse.window_jar: {exc}", file=sys.stderr)
        record_jar(None)
        return 0 if "no javac" in str(exc) else 1
    record_jar(jar)
    print(jar)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

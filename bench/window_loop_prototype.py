"""A JVM loop per sorted group vs Spark's own operators for the fixed windows (issue 21 item 3).

    ./dev bench window_loop_prototype                        # 10M rows, tumbling and hopping
    ./dev bench window_loop_prototype --rows 2000000 --kinds tumbling

A measured prototype, not used by the jobs (kept for its figures in ``bench/README.md``; the
product's loop, which it led to, is ``lakehouse/window_loop.py`` with ``lakehouse/jvm/``). It compiles ``bench/window_loop/FixedWindowLoop.java``
with ``javac`` against pyspark's own jars (into ``.local/bench/``), generates the window bench's
table (``window_recompute_bench.make_table``), then times three plans over the same rows, each to
Spark's ``noop`` sink, warmed once and best of ``--repeat``: the floor (scan, shuffle by the closing
group, sort by offset), the native path's windows (``lakehouse.window_native``, Spark's window
operator and aggregations) and the same sort followed by the Java loop. It checks that the loop's
windows equal the native path's (which the parity tests hold to the edge), row for row.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

SOURCE = REPO / "bench" / "window_loop" / "FixedWindowLoop.java"


def build_jar(out_dir: Path) -> Path:
    """``FixedWindowLoop.java`` compiled against pyspark's jars; the jar's path."""
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    classes = out_dir / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("javac not found: the prototype needs a JDK (Java 17) on the PATH")
    subprocess.run([javac, "-nowarn", "-d", str(classes), "-cp", f"{jars}/*", str(SOURCE)], check=True)
    jar = out_dir / "window-loop.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True)
    return jar


def warmed_best_of(repeat: int, action) -> float:
    """``action`` run once untimed (class loading, JIT), then the best of ``repeat`` timed runs."""
    from window_recompute_bench import best_of

    action()
    return best_of(repeat, action)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000, help="sensor readings (default 10M)")
    parser.add_argument("--kinds", default="tumbling,hopping", help="comma-separated: tumbling,hopping")
    parser.add_argument("--repeat", type=int, default=2, help="timed runs per plan, the best kept (default 2)")
    args = parser.parse_args()

    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    from lakehouse import window_native as native
    from lakehouse.session import SparkSettings, build_spark, spark_jars
    from lakehouse.window_recompute import WindowRecomputeOptions, WindowSpec, prepare_input
    from window_recompute_bench import SPECS, make_table

    jar = build_jar(REPO / ".local" / "bench")
    workdir = Path(tempfile.mkdtemp(prefix="window-loop-"))
    settings = SparkSettings.from_env(env={}, local_dir=str(workdir), app_name="window-loop-prototype")
    settings.extra_conf["spark.driver.memory"] = os.environ.get("BENCH_DRIVER_MEMORY", "6g")
    settings.extra_conf["spark.driver.extraClassPath"] = ":".join([*spark_jars(), str(jar)])
    spark = build_spark(settings)
    table = "lake.bench.readings"
    make_table(spark, table, args.rows, 1000)
    print(f"{args.rows:,} readings; {spark.sparkContext.master}, shuffle partitions "
          f"{spark.conf.get('spark.sql.shuffle.partitions')}", flush=True)
    groups = ["__order_0", "key"]

    def noop(df: DataFrame):
        return lambda: df.write.format("noop").mode("overwrite").save()

    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        if kind not in ("tumbling", "hopping"):
            raise SystemExit(f"--kinds: the prototype computes tumbling and hopping windows, not {kind!r}")
        spec = WindowSpec.parse(**SPECS[kind])  # type: ignore[arg-type]
        options = WindowRecomputeOptions(table=table, output="lake.bench.unused", value_column="temperature",
                                         window=spec, engine="native", full=True)
        data = prepare_input(spark.table(table), options).where(F.col("ts").isNotNull() & F.col("value").isNotNull())
        hashed = data.withColumn("__gh", native.group_hash(groups))
        ordered = hashed.repartition("__gh", *groups).sortWithinPartitions("__gh", *groups, "__order_1")
        operators = native.native_fixed_windows(hashed, spec, ["__order_0", "__order_1"], groups)

        def loop() -> DataFrame:
            # a new plan per run: a query's RDD is built once and keeps its shuffle files, so
            # running the same one again would skip the scan and the shuffle the floor pays for
            return DataFrame(spark._jvm.streamlake.bench.FixedWindowLoop.apply(  # type: ignore[union-attr]
                ordered.select("*")._jdf, spec.duration_ms, spec.step_ms or spec.duration_ms, spec.grace_ms,
                spec.aggregation), spark)

        floor = warmed_best_of(args.repeat, noop(ordered))
        ops = warmed_best_of(args.repeat, noop(operators))
        java = warmed_best_of(args.repeat, lambda: noop(loop())())
        print(f"  {kind:8} floor (scan + shuffle + offset sort) {floor:6.2f}s", flush=True)
        print(f"  {kind:8} windows, Spark's operators           {ops:6.2f}s  = {floor / ops:4.0%} of the floor",
              flush=True)
        print(f"  {kind:8} windows, sort + JVM loop             {java:6.2f}s  = {floor / java:4.0%} of the floor",
              flush=True)
        a = operators.selectExpr("key", "window_start", "window_end", "value").alias("a")
        b = loop().selectExpr("key", "window_start", "window_end", "value").alias("b")
        joined = a.join(b, ["key", "window_start", "window_end"], "full_outer")
        differ = joined.where("a.value IS NULL OR b.value IS NULL "
                              "OR abs(a.value - b.value) > 1e-9 * greatest(abs(a.value), 1)").count()
        print(f"  {kind:8} {a.count():,} windows; rows that differ between the two: {differ}", flush=True)
        if differ:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

package streamlake.windows;

import org.apache.spark.util.AccumulatorV2;

/**
 * What the window loop counts while it runs (the job's report and the window state read them
 * after the job): each task adds its figures once, when its input is exhausted, and the driver
 * holds their sum ({@link #value}; {@link #encoded} for Python).
 *
 * <p>An accumulator instead of per-group summary rows observed with {@code DataFrame.observe}:
 * those rows had to travel with the windows, and the observation evaluated its aggregates on every
 * window row and a filter removed the summaries again (10M sliding windows: 1.2-2.4 CPU-s of the
 * job's 9-10; bench/README.md). Spark applies a task's accumulator updates of a result stage once,
 * even when the task is retried, as it does for an observation's.
 */
public final class LoopFigures extends AccumulatorV2<long[], long[]> {
    /** The figures, in {@link #value}'s order (lakehouse/window_loop.py names them). */
    public static final String[] NAMES = {"groups", "state_floor", "stale_groups", "rows", "skipped", "replayed",
                                          "windows", "new_rows", "changed", "reordered"};
    static final int GROUPS = 0, STATE_FLOOR = 1, STALE_GROUPS = 2, ROWS = 3, SKIPPED = 4, REPLAYED = 5,
        WINDOWS = 6, NEW_ROWS = 7, CHANGED = 8, REORDERED = 9;
    /** {@code state_floor} when no group reported a bound (the smallest bound is kept). */
    static final long NO_FLOOR = Long.MAX_VALUE;

    private long[] sums = zero();

    private static long[] zero() {
        long[] out = new long[NAMES.length];
        out[STATE_FLOOR] = NO_FLOOR;
        return out;
    }

    /** A new accumulator, registered (without a name: nothing to show per task) with {@code spark}. */
    public static LoopFigures register(org.apache.spark.sql.classic.SparkSession spark) {
        LoopFigures figures = new LoopFigures();
        spark.sparkContext().register(figures);
        return figures;
    }

    @Override
    public boolean isZero() {
        return java.util.Arrays.equals(sums, zero());
    }

    @Override
    public LoopFigures copy() {
        LoopFigures out = new LoopFigures();
        out.sums = sums.clone();
        return out;
    }

    @Override
    public void reset() {
        sums = zero();
    }

    /** Adds one task's figures (the floor is a minimum, the others sums). */
    @Override
    public void add(long[] task) {
        for (int i = 0; i < sums.length; i++) {
            sums[i] = i == STATE_FLOOR ? Math.min(sums[i], task[i]) : sums[i] + task[i];
        }
    }

    @Override
    public void merge(AccumulatorV2<long[], long[]> other) {
        add(((LoopFigures) other).sums);
    }

    @Override
    public long[] value() {
        return sums.clone();
    }

    /**
     * Every figure as {@code name=value} pairs joined by {@code ;} ({@link #NAMES} order; an empty
     * {@code state_floor} when no group had a bound): one string, so that Python reads all of them
     * in one call through the gateway (a map's iterator costs a round trip per entry).
     */
    public String encoded() {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < NAMES.length; i++) {
            if (i > 0) out.append(';');
            out.append(NAMES[i]).append('=');
            if (!(i == STATE_FLOOR && sums[i] == NO_FLOOR)) out.append(sums[i]);
        }
        return out.toString();
    }
}

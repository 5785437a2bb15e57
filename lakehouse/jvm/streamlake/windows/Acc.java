package streamlake.windows;

/**
 * One window's partial aggregate, with the edge's arithmetic (stream_edge/dataframe/windows/
 * aggregations.py): sum starts at 0 and adds in arrival order, count counts the values, mean keeps
 * a floating sum (0.0 + values, as the edge does for integer values too) and a count, min and max
 * keep the first smallest or largest value. Values are longs ({@code integral}) or doubles.
 */
final class Acc {
    static final int SUM = 0, COUNT = 1, MEAN = 2, MIN = 3, MAX = 4;

    long n;
    long l;
    double d;

    /** A copy (the sliding engine seeds new windows from copies of older ones). */
    Acc copy() {
        Acc c = new Acc();
        c.n = n;
        c.l = l;
        c.d = d;
        return c;
    }

    /** Adds one value ({@code lv} when integral, else {@code dv}). */
    void add(int agg, boolean integral, long lv, double dv) {
        switch (agg) {
            case SUM:
                if (integral) l = Math.addExact(l, lv); else d += dv;
                break;
            case MEAN:
                d += integral ? (double) lv : dv;
                break;
            case MIN:
                if (integral) { if (n == 0 || lv < l) l = lv; } else if (n == 0 || dv < d) d = dv;
                break;
            case MAX:
                if (integral) { if (n == 0 || lv > l) l = lv; } else if (n == 0 || dv > d) d = dv;
                break;
            default:
                break;
        }
        n++;
    }

    /** The window's value as the edge emits it: a Long or a Double. */
    Object value(int agg, boolean integral) {
        switch (agg) {
            case COUNT:
                return n;
            case MEAN:
                return d / n;
            default:
                return integral ? (Object) l : (Object) d;
        }
    }

    /** The aggregation's index: sum, count, mean, min or max. */
    static int kind(String name) {
        int kind = java.util.Arrays.asList("sum", "count", "mean", "min", "max").indexOf(name);
        if (kind < 0) throw new IllegalArgumentException("the window loop has no aggregation " + name);
        return kind;
    }

    /** Whether results are longs: count always; sum, min and max of integral values. */
    static boolean longResult(int agg, boolean integral) {
        return agg == COUNT || (integral && agg != MEAN);
    }
}

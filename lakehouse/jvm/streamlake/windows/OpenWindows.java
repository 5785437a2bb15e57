package streamlake.windows;

/**
 * The open tumbling or hopping windows of one key: partial aggregates by window index
 * {@code k = start / step} in a ring. Every open window starts within (closed bound, event time],
 * an interval of grace + duration, so the ring holds (grace + duration) / step + 1 of them at most;
 * it grows when a wider span shows up. Windows are taken out in start order once closed.
 */
final class OpenWindows {
    private static final long EMPTY = Long.MIN_VALUE;

    final Object key;
    private long[] index;
    private Acc[] accs;
    private int mask;
    private int open;
    private long low;   // smallest open k (when open > 0)
    private long high;  // largest open k (when open > 0)

    OpenWindows(Object key, int capacity) {
        this.key = key;
        int size = Integer.highestOneBit(Math.max(4, capacity - 1)) << 1;
        index = new long[size];
        java.util.Arrays.fill(index, EMPTY);
        accs = new Acc[size];
        mask = size - 1;
    }

    boolean isEmpty() {
        return open == 0;
    }

    long lowest() {
        return low;
    }

    /** The partial aggregate of window {@code k}, created when new; {@code created[0]} says which. */
    Acc at(long k, boolean[] created) {
        if (open > 0) {
            long span = Math.max(high, k) - Math.min(low, k) + 1;
            if (span > index.length) grow(span);
        }
        int slot = (int) (k & mask);
        if (index[slot] == k) {
            created[0] = false;
            return accs[slot];
        }
        Acc acc = new Acc();
        index[slot] = k;
        accs[slot] = acc;
        if (open == 0) { low = k; high = k; } else { if (k < low) low = k; if (k > high) high = k; }
        open++;
        created[0] = true;
        return acc;
    }

    /** Removes window {@code k}; its partial aggregate, or null when it is not open. */
    Acc take(long k) {
        int slot = (int) (k & mask);
        if (open == 0 || index[slot] != k) return null;
        Acc acc = accs[slot];
        index[slot] = EMPTY;
        accs[slot] = null;
        open--;
        if (open > 0 && k == low) advanceLow();
        return acc;
    }

    /** Calls {@code sink} for every open window with {@code k <= upto}, in order, and removes it. */
    void closeUpTo(long upto, Sink sink) {
        while (open > 0 && low <= upto) {
            int slot = (int) (low & mask);
            Acc acc = accs[slot];
            long k = low;
            index[slot] = EMPTY;
            accs[slot] = null;
            open--;
            sink.closed(this, k, acc);
            if (open > 0) advanceLow();
        }
    }

    private void advanceLow() {
        long k = low + 1;
        while (index[(int) (k & mask)] != k) k++;
        low = k;
    }

    private void grow(long span) {
        if (span > (1 << 28)) {
            throw new IllegalStateException("the window loop would keep more than 2^28 open windows of one key "
                + "(a hopping step far below grace + duration); run the windows job with --jvm-loop off");
        }
        int size = Integer.highestOneBit((int) span - 1) << 2;
        long[] oldIndex = index;
        Acc[] oldAccs = accs;
        index = new long[size];
        java.util.Arrays.fill(index, EMPTY);
        accs = new Acc[size];
        mask = size - 1;
        for (int i = 0; i < oldIndex.length; i++) {
            if (oldIndex[i] != EMPTY) {
                int slot = (int) (oldIndex[i] & mask);
                index[slot] = oldIndex[i];
                accs[slot] = oldAccs[i];
            }
        }
    }

    /** Receives the windows {@link #closeUpTo} removes. */
    interface Sink {
        void closed(OpenWindows windows, long k, Acc acc);
    }
}

"""The windows job's strategy, chosen by one pure function from what a run knows (no Spark)."""

from __future__ import annotations

import pytest

from lakehouse.windows.strategy import STRATEGIES, RunFacts, choose_strategy

EXISTING = dict(output="existing", increment=None)


@pytest.mark.parametrize("facts, strategy, why", [
    (RunFacts(), "exact", "a full run (first run): the output is created"),
    (RunFacts(provable=True, output="existing", full=True, sliding=True), "proven-then-patch",
     "--full into the existing output"),
    (RunFacts(provable=True, output="existing", sliding=True,
              increment="the window definition changed since the last run"),
     "proven-then-patch", "a full run (the window definition changed"),
    (RunFacts(provable=True, output="existing", full=True), "exact",
     "fixed windows by the exact plan: the last run saw an unknown number of late records"),
    (RunFacts(provable=True, output="existing", full=True, late_records=1200), "exact",
     "the last run saw 1,200 late records"),
    (RunFacts(provable=True, output="existing", full=True, late_records=0), "proven-then-patch",
     "--full into the existing output: the last run saw no record later than the grace: the proven plan, "
     "no sort by offset"),
    (RunFacts(provable=True, output="existing", late_records=0, increment="the source had delete commits since "
              "snapshot 7"), "proven-then-patch", "a full run (the source had delete commits"),
    (RunFacts(provable=True, output="existing", full=True, sliding=True, late_records=3), "proven-then-patch",
     "--full into the existing output"),
    (RunFacts(provable=True, output="missing", full=True, late_records=0), "exact", "the output is created"),
    (RunFacts(provable=True, output="other-columns", full=True, late_records=0), "exact", "columns differ"),
    (RunFacts(native=False, output="existing", full=True, late_records=0), "exact", "the python-engine"),
    (RunFacts(provable=True, **EXISTING, late_records=0), "tail-append", "the windows that close now"),
    (RunFacts(provable=True, output="other-columns", full=True), "exact", "columns differ"),
    (RunFacts(provable=True, output="delta", increment="incremental runs need an Iceberg source and output"),
     "exact", "a Delta output is overwritten"),
    (RunFacts(native=False, output="existing", full=True), "exact", "the python-engine computes every key"),
    (RunFacts(per_key=False, output="existing", full=True), "exact", "windows closing per partition"),
    (RunFacts(output="existing", full=True), "exact", "no order column outside the group"),
    (RunFacts(**EXISTING, new_snapshot=False), "nothing-new", "no new source snapshot"),
    (RunFacts(**EXISTING), "tail-append", "the windows that close now"),
    (RunFacts(**EXISTING, sliding=True, has_state=True), "tail-append", "the windows that close now"),
    (RunFacts(**EXISTING, sliding=True), "merge-keys", "no sliding window state"),
    (RunFacts(**EXISTING, native=False), "merge-keys", "the python-engine recomputes every changed key"),
    (RunFacts(**EXISTING, native=False, per_key=False), "exact",
     "the python-engine closing per partition recomputes every window"),
])
def test_each_situation_has_one_named_strategy_and_says_why(facts, strategy, why):
    chosen, reason = choose_strategy(facts)
    assert (chosen, why in reason) == (strategy, True), reason
    assert chosen in STRATEGIES

"""The runner's garbage collector: freeze what start-up built, and collect young objects less often.

Every claimed run allocates about a dozen container objects (its task and coroutine, its
invocation, attempt, context and outcome), and reference counting frees nearly all of them
when the run's finish is written. CPython's collector does not know that. By default it
collects the youngest generation after 700 net allocations, which is every few dozen jobs.
The objects of the runs in flight survive those collections and move to the older
generations. Collecting those walks every object the process holds, and the modules imported
at start-up are most of them.

Measured with ``gc.callbacks`` in a runner draining 40,000 no-op jobs
(docs/adr/0045-the-runners-garbage-collector.md):

- with the defaults: 401 ms in 673 young, 61 middle and 5 full collections. That is 10 µs per
  job, a third of the worker's CPU per job;
- after ``gc.freeze()`` at start: 154 ms;
- with a young threshold of 20,000 as well: 3 ms.

The cost is that cyclic garbage waits longer to be collected: until about 20,000 more
containers were allocated than freed, a few megabytes. Reference counting still frees
everything else at once. ``tuned`` restores the previous settings when the runner stops, so a
process that runs a runner in-process, such as the tests, gets its collector back.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: Net container allocations between two collections of the youngest generation (CPython: 700).
YOUNG_THRESHOLD = 20_000


@contextlib.contextmanager
def tuned(young_threshold: int = YOUNG_THRESHOLD) -> Iterator[None]:
    """Collect once, freeze what exists (start-up's objects are never walked again), raise the
    young threshold; undo both on exit. The older generations keep their thresholds."""
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(young_threshold, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()

"""The runner's record of one claimed attempt, from claim until its result is written.

An attempt stays here — and keeps being heartbeated — until the store acknowledged its
finish or release, so its lease cannot lapse while the outcome waits in a batch. For the same
reason it counts against ``unfinished_bound`` until then: the runner claims no more while
that many runs are claimed and not committed, however fast its handlers return
(docs/adr/0028-backpressure-and-stable-plans.md). Two flags
say its result must be thrown away: ``lost`` (a heartbeat found another attempt owns the run)
and ``released`` (the runner gave it back while draining).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator, Mapping

from sundial.runner import invocation, registry
from sundial.store import claims


class Attempt:
    __slots__ = (
        "extended_at",
        "finishing",
        "invocation",
        "lost",
        "model",
        "released",
        "run",
        "task",
    )

    def __init__(
        self,
        run: claims.ClaimedRun,
        job: invocation.Invocation,
        model: registry.ExecutionModel,
        extended_at: float,
    ) -> None:
        self.run = run
        self.invocation = job
        self.model = model
        self.lost = False
        self.released = False
        self.finishing = False  # the outcome is queued or being written
        self.task: asyncio.Task[None] | None = None  # the runner's task running it
        # time.monotonic() when the claim or the last successful heartbeat of this attempt
        # was sent: the lease runs at least lease_seconds from then (see heartbeats).
        self.extended_at = extended_at

    @property
    def key(self) -> tuple[int, int]:
        return self.run.id, self.run.attempt

    def log_fields(self) -> dict[str, object]:
        return {"run_id": self.run.id, "attempt": self.run.attempt, "handler": self.run.handler}


class Held(Mapping[int, Attempt]):
    """The runner's attempts by run id, and how many of them each namespace has.

    The counts are a claim's fair share (``claims.claim``'s ``held``): the slots freed one at a
    time beside a flood go to the namespace this runner runs least of. They are kept with the
    attempts, not counted per claim, because at a busy runner's slot counts a count per claim
    would walk thousands of attempts for every claim of one slot; keeping both in one place
    keeps them equal (``by_namespace`` is always the attempts counted by namespace)."""

    def __init__(self) -> None:
        self._attempts: dict[int, Attempt] = {}
        self._by_namespace: collections.Counter[str] = collections.Counter()

    def __getitem__(self, run_id: int) -> Attempt:
        return self._attempts[run_id]

    def __iter__(self) -> Iterator[int]:
        return iter(self._attempts)

    def __len__(self) -> int:
        return len(self._attempts)

    @property
    def by_namespace(self) -> collections.Counter[str]:
        """Attempts per namespace (runs without a namespace are not counted). Read only."""
        return self._by_namespace

    def add(self, attempt: Attempt) -> None:
        """Hold ``attempt``, in place of an attempt of the same run if one is held."""
        run = attempt.run
        previous = self._attempts.get(run.id)
        if previous is not None:
            self._uncount(previous)
        self._attempts[run.id] = attempt
        if run.namespace:
            self._by_namespace[run.namespace] += 1

    def drop(self, attempt: Attempt) -> None:
        """Stop holding ``attempt``'s run (whichever attempt of it is held); nothing if none."""
        dropped = self._attempts.pop(attempt.run.id, None)
        if dropped is not None:
            self._uncount(dropped)

    def _uncount(self, attempt: Attempt) -> None:
        namespace = attempt.run.namespace
        if not namespace:
            return
        left = self._by_namespace[namespace] - 1
        if left > 0:
            self._by_namespace[namespace] = left
        else:
            del self._by_namespace[namespace]


def unfinished_bound(slots: int, configured: int | None) -> int:
    """The most runs a runner holds claimed whose finish is not committed yet: ``configured``,
    or by default twice its slots (every slot busy, and as many outcomes waiting for their
    write: one finish batch can be written while the next runs). At least one per slot."""
    if configured is None:
        return 2 * slots
    return max(configured, slots)

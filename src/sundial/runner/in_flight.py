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


def unfinished_bound(slots: int, configured: int | None) -> int:
    """The most runs a runner holds claimed whose finish is not committed yet: ``configured``,
    or by default twice its slots (every slot busy, and as many outcomes waiting for their
    write: one finish batch can be written while the next runs). At least one per slot."""
    if configured is None:
        return 2 * slots
    return max(configured, slots)

"""When a runner with a backlog claims: not a claim per freed slot.

A claim costs about the same for one run as for sixteen: a transaction of four round trips,
the walk to the head of each namespace, a lock per run. A runner claims when it has free
slots, and one of few slots running short jobs frees them one or two at a time, so with a
backlog it claimed one or two runs at a time and spent most of its CPU, and PostgreSQL's, on
claims (four runners of 8 async slots on 1 ms jobs: about four runs a claim and 1.3-1.6 ms of
CPU per job, and completions fell as the backlog grew; docs/adr/0056-claims-gather-slots.md).

So a runner whose last claim came back full (a backlog is waiting) waits until ``batch``
slots are free (half its slots, at most ``MAX_BATCH``) or ``GATHER_SECONDS`` have passed since
a slot was first free, whichever comes first. A runner whose last claim was not full claims
at once, so a quiet queue's start latency is unchanged, and a long job never holds back the
slots beside it for more than ``GATHER_SECONDS``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GATHER_SECONDS", "MAX_BATCH", "ClaimGathering"]

#: The longest a free slot waits for others before the runner claims anyway.
GATHER_SECONDS = 0.002
#: Past this many runs a claim costs little more per run; a runner of many slots need not wait
#: for half of them.
MAX_BATCH = 16


@dataclass
class ClaimGathering:
    """One runner's gathering of free slots for one execution model."""

    slots: int
    #: The last claim returned as many runs as it asked for.
    backlogged: bool = False
    #: ``time.monotonic()`` when a slot was first free and the runner chose to wait.
    since: float | None = None

    @property
    def batch(self) -> int:
        return max(1, min((self.slots + 1) // 2, MAX_BATCH))

    def wait_seconds(self, free: int, now: float) -> float:
        """0.0: claim now; otherwise how long to wait for more free slots before claiming
        anyway (the caller wakes when a slot frees, and asks again)."""
        if free <= 0:
            return 0.0  # nothing to claim for: the caller does not claim
        if not self.backlogged or free >= self.batch:
            self.since = None
            return 0.0
        if self.since is None:
            self.since = now
        left = GATHER_SECONDS - (now - self.since)
        if left <= 0.0:
            self.since = None
            return 0.0
        return left

    def claimed(self, count: int, limit: int) -> None:
        """Record a claim's result: full means a backlog is waiting."""
        self.backlogged = count >= limit > 0
        self.since = None

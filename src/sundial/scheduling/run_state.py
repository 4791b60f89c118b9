"""The states of a run, and the sets of them every part of Sundial reasons about.

One word for each state: ``RunState``'s values are the strings the run store keeps in
``job_runs.state`` (its CHECK constraint lists exactly these; a test reads the constraint from
a migrated database and compares). A ``StrEnum`` member equals its string, so a state read
from the database (a plain ``str``) is found in these sets and compares equal to a member.

The sets, each defined once here::

    ACTIVE    scheduled, blocked, pending, running, retry_wait
              The run has not ended: it waits for time (scheduled, retry_wait), for its
              upstream runs (blocked), for a worker (pending), or executes (running).
              ``finished_at`` is NULL. Cancelling it does something.
    FINISHED  completed, failed, timed_out, cancelled, dead_lettered
              The run has ended ("terminal" elsewhere: this is the one word): ``finished_at``
              is set, nothing changes it by itself, maintenance may archive it, and its Pods
              may be collected. ACTIVE and FINISHED partition the states.
    FAILED    failed, timed_out, dead_lettered
              FINISHED without success and not by a person's choice: what counts as a failed
              run (history limits, consecutive failures) and what ``sundial runs replay`` puts
              back in the queue. FINISHED minus FAILED is {completed, cancelled}.
"""

from __future__ import annotations

import enum

__all__ = ["ACTIVE", "FAILED", "FINISHED", "RunState"]


class RunState(enum.StrEnum):
    """A run's state, as ``job_runs.state`` spells it."""

    SCHEDULED = "scheduled"
    """Waiting for its ``run_at``; promoted to pending once due."""
    BLOCKED = "blocked"
    """Waiting for its upstream runs to complete."""
    PENDING = "pending"
    """Due: waiting for a worker to claim it."""
    RUNNING = "running"
    """Claimed: a worker holds its lease and executes an attempt."""
    RETRY_WAIT = "retry_wait"
    """An attempt failed and will be retried after a backoff."""
    COMPLETED = "completed"
    """An attempt succeeded."""
    FAILED = "failed"
    """Ended by a failure that is never retried (bad args, a permanent failure, upstream)."""
    TIMED_OUT = "timed_out"
    """The last attempt exceeded its timeout with no retries left."""
    CANCELLED = "cancelled"
    """A person, a deleted JobRun or a Replace policy cancelled it."""
    DEAD_LETTERED = "dead_lettered"
    """Its retries are spent; visible and replayable."""


ACTIVE: frozenset[RunState] = frozenset(
    {
        RunState.SCHEDULED,
        RunState.BLOCKED,
        RunState.PENDING,
        RunState.RUNNING,
        RunState.RETRY_WAIT,
    }
)
FINISHED: frozenset[RunState] = frozenset(RunState) - ACTIVE
FAILED: frozenset[RunState] = frozenset(
    {RunState.FAILED, RunState.TIMED_OUT, RunState.DEAD_LETTERED}
)


def coerce_state(record: object) -> None:
    """Make a frozen record's ``state``, read from a row as text, a :class:`RunState`.

    Called from the ``__post_init__`` of each record the store reads a run's state into, so
    every state above the store is a ``RunState`` (a ``StrEnum``: it still equals its text).
    A value that is not a state raises ``ValueError``: the table's CHECK allows none."""
    object.__setattr__(record, "state", RunState(record.state))  # type: ignore[attr-defined]

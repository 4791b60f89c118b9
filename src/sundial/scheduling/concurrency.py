"""What a fire does when a run of the same job is still active: ``concurrencyPolicy``.

- **Forbid** (default): while a run of the job is active, new fires are skipped and counted
  (event reason ``JobAlreadyActive``, as a Kubernetes CronJob does).
- **Allow**: every fire starts a run, whatever is running.
- **Replace**: the active runs are cancelled, then the new run starts.
- **BufferOne**: while a run is active, the first fire that comes waits (reason
  ``FireBuffered``) and starts as soon as no run is active; further fires while one waits are
  skipped and counted (reason ``BufferFull``). One run at a time, none lost to a slow run,
  no pile-up: Temporal Schedules' overlap policy of the same name.

Forbid and Replace both promise at most one run of the job at a time, so when missed-fire
Backfill hands over several fires at once, only the newest starts and the older ones are
skipped (reason ``ConcurrencyLimitsBackfill``): creating them together would run them side by
side. Only Allow backfills more than one fire per decision. BufferOne takes them in time
order: the oldest starts (or waits, behind an active run), the next waits, the rest are
skipped.

Pure: the caller counts the job's active runs, keeps the waiting fire (``buffered``) and
carries out ``cancel_active``; the cancellation and the new run's insert belong in the same
transaction.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sundial.scheduling import errors

JOB_ALREADY_ACTIVE = "JobAlreadyActive"
CONCURRENCY_LIMITS_BACKFILL = "ConcurrencyLimitsBackfill"
REPLACED_ACTIVE_RUN = "ReplacedActiveRun"
FIRE_BUFFERED = "FireBuffered"
BUFFER_FULL = "BufferFull"


class ConcurrencyPolicy(enum.StrEnum):
    """The ``concurrencyPolicy`` field."""

    FORBID = "Forbid"
    ALLOW = "Allow"
    REPLACE = "Replace"
    BUFFER_ONE = "BufferOne"

    @classmethod
    def from_spec(cls, value: str | None) -> ConcurrencyPolicy:
        """Parse the field; ``None`` is the default, Forbid."""
        try:
            return cls(value or cls.FORBID)
        except ValueError as error:
            raise errors.InvalidPolicyError(
                "concurrencyPolicy", value, "must be one of Forbid, Allow, Replace, BufferOne"
            ) from error


@dataclass(frozen=True)
class ConcurrencyDecision:
    """``start``: fire times to create runs for, oldest first; ``skipped``: fire times dropped by
    the policy; ``cancel_active``: cancel every active run of the job before starting;
    ``reason``: the event reason when something was skipped, replaced or buffered, else
    ``None``; ``buffered``: the fire that waits after this decision (BufferOne only)."""

    start: tuple[datetime, ...]
    skipped: tuple[datetime, ...]
    cancel_active: bool
    reason: str | None
    buffered: datetime | None = None


def decide(
    policy: ConcurrencyPolicy,
    fire_times: Sequence[datetime],
    active_runs: int,
    buffered: datetime | None = None,
) -> ConcurrencyDecision:
    """Apply ``policy`` to the fires about to be created, given the job's active run count and,
    for BufferOne, the fire already waiting (older than every one in ``fire_times``)."""
    if active_runs < 0:
        raise ValueError(f"active_runs must be >= 0, got {active_runs}")
    fires = tuple(sorted(fire_times))
    if policy is ConcurrencyPolicy.BUFFER_ONE:
        return _buffer_one(fires, active_runs, buffered)
    if not fires:
        return ConcurrencyDecision((), (), False, None)
    if policy is ConcurrencyPolicy.ALLOW:
        return ConcurrencyDecision(fires, (), False, None)
    if policy is ConcurrencyPolicy.FORBID and active_runs > 0:
        return ConcurrencyDecision((), fires, False, JOB_ALREADY_ACTIVE)
    newest, older = fires[-1:], fires[:-1]
    cancel = policy is ConcurrencyPolicy.REPLACE and active_runs > 0
    if cancel:
        reason: str | None = REPLACED_ACTIVE_RUN
    elif older:
        reason = CONCURRENCY_LIMITS_BACKFILL
    else:
        reason = None
    return ConcurrencyDecision(newest, older, cancel, reason)


def _buffer_one(
    fires: tuple[datetime, ...], active_runs: int, buffered: datetime | None
) -> ConcurrencyDecision:
    """A line of one run and one waiting fire, in time order; what does not fit is skipped."""
    # The waiting fire is older than any new one, unless the schedule was edited meanwhile:
    # sorting keeps the line in time order either way.
    line = tuple(sorted(((buffered,) if buffered is not None else ()) + fires))
    start = line[:1] if active_runs == 0 else ()
    rest = line[len(start) :]
    waiting = rest[0] if rest else None
    skipped = rest[1:]
    if skipped:
        reason: str | None = BUFFER_FULL
    elif waiting is not None and waiting != buffered:
        reason = FIRE_BUFFERED
    else:
        reason = None
    return ConcurrencyDecision(start, skipped, False, reason, waiting)

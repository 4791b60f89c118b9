"""What to do with the fires that came due while nobody created them.

The trigger loop stores, per schedule, ``next_fire_time``: the first fire not yet handled. When
it finds ``next_fire_time <= now`` it calls ``decide`` and, in one transaction, creates runs
for ``decision.fire_times`` and stores ``decision.next_fire_time``. The same call serves a loop
that is a second late, a leader that was down for two hours and a schedule resumed after a
week of ``suspend: true``.

Definitions (docs/design.md):

- **Due fires** are the schedule's fire times in ``[next_fire_time, now]``.
- The **newest** due fire is **on time** when ``now - fire <= on_time_tolerance`` (60 s by
  default: a loop that is busy for a few seconds is not "missing" anything). Every other due
  fire is **missed**: it is either late, or superseded by a newer due fire.
- ``startingDeadlineSeconds`` bounds every policy: a fire older than ``now - deadline`` is never
  started, as with a Kubernetes CronJob.
- **Coalesce** (default) creates one run, for the newest due fire.
- **Backfill** creates the newest ``maxBackfill`` due fires, oldest first. The newest are kept
  rather than the oldest so that the present always runs and ``Backfill(1)`` equals
  ``Coalesce``; older missed fires beyond the cap are skipped.
- **Skip** creates a run only for an on-time fire; every missed fire is skipped.

Every due fire gets exactly one outcome, counted for metrics and status:
``ran`` (the newest fire, created) + ``backfilled`` (older fires, created) + ``coalesced``
(folded into the newest by Coalesce) + ``skipped`` == ``due``. Counting stops at
``MAX_COUNTED_FIRES`` per window (``counts_capped``), so a minute schedule resumed after a year
costs milliseconds, not seconds; the counts are then lower bounds.
"""

from __future__ import annotations

import collections
import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from sundial.scheduling import cron, errors
from sundial.scheduling.clock import require_aware

DEFAULT_ON_TIME_TOLERANCE = timedelta(seconds=60)
MAX_BACKFILL = 1000
MAX_COUNTED_FIRES = 1000
_TICK = timedelta(microseconds=1)


class MissedFirePolicy(enum.StrEnum):
    """The ``missedFirePolicy`` field."""

    COALESCE = "Coalesce"
    BACKFILL = "Backfill"
    SKIP = "Skip"


@dataclass(frozen=True)
class MissedFireRules:
    """The missed-fire fields of a ScheduledJob, validated."""

    policy: MissedFirePolicy = MissedFirePolicy.COALESCE
    max_backfill: int = 1
    starting_deadline_seconds: int | None = None
    on_time_tolerance: timedelta = DEFAULT_ON_TIME_TOLERANCE

    def __post_init__(self) -> None:
        if not isinstance(self.policy, MissedFirePolicy):
            raise errors.InvalidPolicyError(
                "missedFirePolicy", self.policy, "must be one of Coalesce, Backfill, Skip"
            )
        if (
            isinstance(self.max_backfill, bool)
            or not isinstance(self.max_backfill, int)
            or not 1 <= self.max_backfill <= MAX_BACKFILL
        ):
            raise errors.InvalidPolicyError(
                "maxBackfill", self.max_backfill, f"must be an integer from 1 to {MAX_BACKFILL}"
            )
        deadline = self.starting_deadline_seconds
        if deadline is not None and (
            isinstance(deadline, bool) or not isinstance(deadline, int) or deadline < 0
        ):
            raise errors.InvalidPolicyError(
                "startingDeadlineSeconds", deadline, "must be an integer of at least 0"
            )
        if self.on_time_tolerance < timedelta(0):
            raise errors.InvalidPolicyError(
                "onTimeTolerance", self.on_time_tolerance, "must not be negative"
            )

    @classmethod
    def from_spec(
        cls,
        policy: str | None,
        max_backfill: int | None = None,
        starting_deadline_seconds: int | None = None,
    ) -> MissedFireRules:
        """Build from the raw spec fields; ``None`` means the documented default."""
        try:
            parsed = MissedFirePolicy(policy or MissedFirePolicy.COALESCE)
        except ValueError as error:
            raise errors.InvalidPolicyError(
                "missedFirePolicy", policy, "must be one of Coalesce, Backfill, Skip"
            ) from error
        return cls(
            policy=parsed,
            max_backfill=1 if max_backfill is None else max_backfill,
            starting_deadline_seconds=starting_deadline_seconds,
        )


@dataclass(frozen=True)
class FireDecision:
    """The outcome of one ``decide`` call; ``fire_times`` oldest first, all UTC."""

    fire_times: tuple[datetime, ...]
    next_fire_time: datetime
    due: int
    missed: int
    ran: int
    backfilled: int
    coalesced: int
    skipped: int
    skipped_past_deadline: int
    counts_capped: bool


def decide(
    schedule: cron.Schedule,
    next_fire_time: datetime,
    now: datetime,
    rules: MissedFireRules | None = None,
) -> FireDecision:
    """Which fires to create now, what happened to the others, and the new ``next_fire_time``.

    ``next_fire_time`` need not be a fire time of ``schedule`` (the schedule may have been
    edited since it was stored): it is read as "nothing before this instant is owed".
    """
    rules = rules or MissedFireRules()
    require_aware(next_fire_time, "next_fire_time")
    require_aware(now, "now")
    if next_fire_time > now:
        return FireDecision((), next_fire_time, 0, 0, 0, 0, 0, 0, 0, False)

    earliest_startable = next_fire_time
    if rules.starting_deadline_seconds is not None:
        deadline = timedelta(seconds=rules.starting_deadline_seconds)
        earliest_startable = max(next_fire_time, now - deadline)
    keep = rules.max_backfill if rules.policy is MissedFirePolicy.BACKFILL else 1

    # One forward pass over the due fires: the common case (a single fire, on time) costs two
    # steps of the schedule. Past MAX_COUNTED_FIRES, stop counting and find the newest fires
    # from the other end instead.
    past_deadline = startable = 0
    newest_startable: collections.deque[datetime] = collections.deque(maxlen=keep)
    newest: datetime | None = None
    capped = False
    moment = schedule.next_fire_after(next_fire_time - _TICK)
    while moment <= now:
        newest = moment
        if moment < earliest_startable:
            past_deadline += 1
        else:
            startable += 1
            newest_startable.append(moment)
        if past_deadline + startable >= MAX_COUNTED_FIRES:
            capped = True
            break
        moment = schedule.next_fire_after(moment)
    if newest is None:
        return FireDecision((), moment, 0, 0, 0, 0, 0, 0, 0, False)

    following = moment
    if capped:
        newest = schedule.previous_fire_at_or_before(now)
        following = schedule.next_fire_after(now)
        newest_startable.clear()
        newest_startable.extend(_newest(schedule, newest, earliest_startable, keep))
        startable = max(startable, _count(schedule, earliest_startable, now))

    due = past_deadline + startable
    on_time = newest >= earliest_startable and now - newest <= rules.on_time_tolerance
    if rules.policy is MissedFirePolicy.SKIP and not on_time:
        newest_startable.clear()
    created = tuple(newest_startable)

    ran = 1 if created else 0
    coalesced = startable - len(created) if rules.policy is MissedFirePolicy.COALESCE else 0
    return FireDecision(
        fire_times=created,
        next_fire_time=following,
        due=due,
        missed=due - (1 if on_time else 0),
        ran=ran,
        backfilled=len(created) - ran,
        coalesced=coalesced,
        skipped=due - len(created) - coalesced,
        skipped_past_deadline=past_deadline,
        counts_capped=capped,
    )


def _count(schedule: cron.Schedule, first: datetime, last: datetime) -> int:
    """How many fire times lie in ``[first, last]``, stopping at ``MAX_COUNTED_FIRES``."""
    count = 0
    for _ in cron.fire_times(schedule, first - _TICK, last):
        count += 1
        if count == MAX_COUNTED_FIRES:
            break
    return count


def _newest(
    schedule: cron.Schedule, newest: datetime, earliest: datetime, keep: int
) -> tuple[datetime, ...]:
    """Up to ``keep`` fire times in ``[earliest, newest]``, the newest ones, oldest first."""
    chosen: list[datetime] = []
    moment = newest
    while len(chosen) < keep and moment >= earliest:
        chosen.append(moment)
        moment = schedule.previous_fire_at_or_before(moment - _TICK)
    return tuple(reversed(chosen))

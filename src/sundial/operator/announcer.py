"""The trigger loop, hosted in the operator, telling Kubernetes what it did.

``AnnouncingTriggerLoop`` is ``scheduler.trigger.TriggerLoop`` (same leader lease, same
transactions) whose every tick turns the store's report into Kubernetes Events on the
ScheduledJob - ``SuccessfulCreate`` per run created, and the reasons ``store.fires`` reports
per schedule (``MissSchedule``, ``TooManyMissedTimes``, ``JobAlreadyActive``, ``Coalesced``,
``Backfilled``, ``FireBuffered``, ``BufferFull``, ``Quarantined``, ``QuotaExceeded``) - and
remembers missed fires for the ScheduleMissed condition.
A schedule the mirror has not listed yet gets no Event (the run is still in PostgreSQL).
"""

from __future__ import annotations

from sundial.api.conditions import EventReason
from sundial.operator import context, events
from sundial.scheduler import trigger
from sundial.store import fires, pool

__all__ = ["AnnouncingTriggerLoop"]

_WARNINGS = frozenset(
    {
        EventReason.MISS_SCHEDULE,
        EventReason.TOO_MANY_MISSED_TIMES,
        EventReason.QUARANTINED,
        EventReason.QUOTA_EXCEEDED,
    }
)
_MISSED = frozenset({EventReason.MISS_SCHEDULE, EventReason.TOO_MANY_MISSED_TIMES})


class AnnouncingTriggerLoop(trigger.TriggerLoop):
    def __init__(
        self,
        store: pool.Pool,
        ctx: context.Context,
        *,
        holder: str | None = None,
        settings: trigger.TriggerSettings | None = None,
    ) -> None:
        super().__init__(
            store, clock=ctx.clock, holder=holder, settings=settings, hot_queue=ctx.hot_queue
        )
        self.ctx = ctx

    async def tick(self) -> fires.FireReport:
        report = await super().tick()
        known = self.ctx.scheduled_jobs
        for run in report.runs:
            body = known.get(run.schedule_id)
            if body is not None:
                self.ctx.recorder.record(
                    body,
                    events.NORMAL,
                    EventReason.SUCCESSFUL_CREATE,
                    f"created run {run.run_id} for {run.fire_time.isoformat()}",
                )
        for outcome in report.outcomes:
            missed = [reason for reason in outcome.events if reason in _MISSED]
            if missed:
                self.ctx.missed[outcome.schedule_id] = (
                    missed[-1],
                    outcome.missed_message
                    or f"fires were missed ({', '.join(missed)}); see the Events",
                )
            body = known.get(outcome.schedule_id)
            if body is None:
                continue
            for text in outcome.events:
                reason = EventReason(text)  # every reason store.fires reports is one (tested)
                event_type = events.WARNING if reason in _WARNINGS else events.NORMAL
                message = outcome.newly_quarantined or outcome.stalled or reason
                if reason is EventReason.MISS_SCHEDULE and outcome.missed_message:
                    message = outcome.missed_message
                if reason is EventReason.QUOTA_EXCEEDED and outcome.quota_message:
                    message = outcome.quota_message
                self.ctx.recorder.record(body, event_type, reason, message)
        fired = {run.schedule_id for run in report.runs}
        for schedule_id in fired:
            if not any(
                outcome.schedule_id == schedule_id and set(outcome.events) & _MISSED
                for outcome in report.outcomes
            ):
                self.ctx.missed.pop(schedule_id, None)
        if report.runs or report.outcomes:
            self.ctx.wake.set()
        return report

"""What the operator adds to the pod launcher it hosts: owner references and Pod Events.

* **Owner references.** A Pod of a job that comes from a ScheduledJob (the job id is the
  ScheduledJob's uid) is owned by it, so deleting the ScheduledJob garbage-collects its Pods.
  The ScheduledJob is looked up in what the last mirror pass listed, else with one GET; a job
  with no ScheduledJob of that uid (an inline JobRun's job, or one made through the store API)
  gets no owner reference: a reference to an object that does not exist would have the garbage
  collector delete the Pod at once.
* **Events**, on the ScheduledJob, for the Pod outcomes people look for: ``OOMKilled``,
  ``Evicted`` (any disruption), ``FailedStart`` (never started, or refused by the apiserver),
  ``DeadlineExceeded``, and ``DeadLettered`` when that end used up the run's retries. The
  launcher reports an attempt's end only after its finish committed, and each Event is keyed by
  (run, attempt) (``events.event_name``), so it is recorded once per attempt: a restarted
  operator does not re-adopt finished attempts, and a second post of the same key is a 409. A
  crash between the commit and the post loses that Event (at most once, like all Events).
  Runs of jobs with no ScheduledJob get no Pod Events; their JobRun status shows the outcome.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sundial.api import common, scheduled_job
from sundial.api.conditions import EventReason
from sundial.operator import context, events, kube, pod_launcher
from sundial.operator.pod_outcomes import PodState

__all__ = ["OperatorPodHooks"]

log = logging.getLogger("sundial.operator.pods")

#: A job found to have no ScheduledJob is looked up again after this long.
_MISSING_FOR_SECONDS = 30.0

_REASONS = {
    PodState.OOM_KILLED: EventReason.OOM_KILLED,
    PodState.DISRUPTED: EventReason.EVICTED,
    PodState.NEVER_STARTED: EventReason.FAILED_START,
    PodState.DEADLINE_EXCEEDED: EventReason.DEADLINE_EXCEEDED,
}


class OperatorPodHooks:
    """``pod_launcher.LaunchHooks`` for the operator (see the module docstring)."""

    def __init__(self, ctx: context.Context) -> None:
        self.ctx = ctx
        self._missing: dict[str, float] = {}  # job id -> when it was found to have no owner

    async def scheduled_job(
        self, namespace: str, job_name: str, job_id: str
    ) -> Mapping[str, Any] | None:
        """The ScheduledJob whose uid is ``job_id``, or None."""
        try:
            key = uuid.UUID(job_id)
        except ValueError:
            return None
        body = self.ctx.scheduled_jobs.get(key)
        if body is not None:
            return body
        missing_since = self._missing.get(job_id)
        if missing_since is not None and time.monotonic() - missing_since < _MISSING_FOR_SECONDS:
            return None
        found = await self.ctx.api.get(kube.SCHEDULED_JOBS, namespace, job_name)
        if found is None or str(found["metadata"].get("uid")) != job_id:
            self._missing[job_id] = time.monotonic()
            return None
        self._missing.pop(job_id, None)
        return found

    async def owner(self, namespace: str, job_name: str, job_id: str) -> Mapping[str, Any] | None:
        body = await self.scheduled_job(namespace, job_name, job_id)
        if body is None:
            return None
        return {
            "apiVersion": common.API_VERSION,
            "kind": scheduled_job.KIND,
            "name": body["metadata"]["name"],
            "uid": body["metadata"]["uid"],
            "blockOwnerDeletion": False,
        }

    async def ended(self, end: pod_launcher.AttemptEnd) -> None:
        reason = _REASONS.get(end.outcome.state)
        dead_lettered = end.run_state == "dead_lettered"
        if reason is None and not dead_lettered:
            return
        try:
            body = await self.scheduled_job(end.namespace, end.job_name, end.job_id)
        except Exception:
            log.exception("could not find the ScheduledJob of run %s", end.run_id)
            return
        if body is None:
            return
        involved = {
            "apiVersion": common.API_VERSION,
            "kind": scheduled_job.KIND,
            "metadata": body["metadata"],
        }
        what = f"run {end.run_id} attempt {end.attempt}: Pod {end.pod_name}"
        if reason is not None:
            self.ctx.recorder.record(
                involved,
                events.WARNING,
                reason,
                f"{what} {end.outcome.describe()}",
                key=f"run-{end.run_id}-{end.attempt}",
            )
        if dead_lettered:
            self.ctx.recorder.record(
                involved,
                events.WARNING,
                EventReason.DEAD_LETTERED,
                events.dead_lettered_message(end.run_id, end.outcome.describe()),
                key=events.dead_lettered_key(end.run_id, end.attempt),
            )

"""What the operator adds to the pod launcher it hosts: owner references and Pod Events.

* **Owner references.** A Pod of a run a user JobRun submitted (``jobRef`` or an inline job) is
  owned by that JobRun, as a Job's Pods are owned by the Job: deleting the JobRun, by hand or
  by its ``ttlSecondsAfterFinished``, garbage-collects its Pods. The JobRun is found by the
  run's idempotency key (``job_runs.run_key``; ``ctx.job_runs``) and confirmed with one GET
  by name and uid, so a JobRun deleted since the last mirror pass is never referenced. Any
  other Pod of a job that comes from a ScheduledJob (the job id is the ScheduledJob's uid) is
  owned by it, so deleting the ScheduledJob garbage-collects its Pods. The ScheduledJob is
  looked up in what the last mirror pass listed, else with one GET. A run with neither gets no
  owner reference: a reference to an object that does not exist would have the garbage
  collector delete the Pod at once. Only one owner is set: the garbage collector deletes a
  dependent only once *every* owner is gone, so a JobRun's Pods must not also be the
  ScheduledJob's.
* **Events**, on the run's user JobRun if it has one, else on the ScheduledJob, for the Pod
  outcomes people look for: ``OOMKilled``, ``Evicted`` (any disruption), ``FailedStart`` (never
  started, or refused by the apiserver), ``DeadlineExceeded``, ``DeadLettered`` when that end
  used up the run's retries, and ``PodDeleted`` (Normal) when a Pod deleted by someone else
  cancelled its run (``podDeletionPolicy: Cancel``). The launcher reports an attempt's end only
  after its finish committed, and each Event is keyed by (run, attempt)
  (``events.event_name``), so it is recorded once per attempt: a restarted operator does not
  re-adopt finished attempts, and a second post of the same key is a 409 (the JobRun's own
  DeadLettered/TimedOut Event, posted by ``job_runs.reconcile``, uses the same key). A crash
  between the commit and the post loses that Event (at most once, like all Events).
* **A Pod gone with its JobRun.** When the launcher finds a Pod gone whose owner is a JobRun,
  one GET says whether the JobRun is gone or being deleted (the garbage collector took the
  Pod, in background or foreground propagation): then the run is cancelled with
  ``job_runs.DELETED_REASON``, never retried, and no ``PodDeleted`` Event is posted (its
  object is going; ``podDeletionPolicy`` had no part in it).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sundial.api import common, job_run, scheduled_job
from sundial.api.conditions import EventReason
from sundial.operator import context, events, job_runs, kube
from sundial.pods import launcher
from sundial.pods.outcomes import PodState
from sundial.scheduling import run_state

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
    """``launcher.LaunchHooks`` for the operator (see the module docstring)."""

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

    def user_job_run(self, idempotency_key: str | None) -> Mapping[str, Any] | None:
        """The user JobRun that submitted the run with ``idempotency_key``, as last seen."""
        if idempotency_key is None:
            return None
        return self.ctx.job_runs.get(idempotency_key)

    async def owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        seen = self.user_job_run(idempotency_key)
        if seen is not None:
            metadata = seen["metadata"]
            found = await self.ctx.api.get(kube.JOB_RUNS, metadata["namespace"], metadata["name"])
            if found is not None and found["metadata"].get("uid") == metadata["uid"]:
                return _reference(job_run.KIND, found)
            # Deleted since it was seen: its run's Pods get no owner (never a dangling one).
            self.ctx.job_runs.pop(idempotency_key, None)
            return None
        body = await self.scheduled_job(namespace, job_name, job_id)
        if body is None:
            return None
        return _reference(scheduled_job.KIND, body)

    async def former_owner(
        self, namespace: str, job_name: str, job_id: str, idempotency_key: str
    ) -> Mapping[str, Any] | None:
        # Right after a restart no mirror pass may have listed the user JobRuns yet, and a
        # JobRun being deleted (held by the finalizer, or by foreground propagation) is not
        # indexed: list them, so a Pod that went with its JobRun cancels, not retries.
        if self.user_job_run(idempotency_key) is None:
            for body in await self.ctx.api.list(kube.JOB_RUNS, [namespace]):
                metadata = body["metadata"]
                if (metadata.get("labels") or {}).get(context.LABEL_MIRROR) == "true":
                    continue
                key = job_runs.run_key(metadata, (body.get("spec") or {}).get("idempotencyKey"))
                if key == idempotency_key:
                    return _reference(job_run.KIND, body)
        return await self.owner(namespace, job_name, job_id, idempotency_key)

    async def deleted_with_owner(self, namespace: str, owner: Mapping[str, Any]) -> str | None:
        if owner.get("kind") != job_run.KIND:
            return None  # a ScheduledJob's Pods: its deletion lets runs finish (ADR 0008)
        found = await self.ctx.api.get(kube.JOB_RUNS, namespace, str(owner["name"]))
        if (
            found is not None
            and found["metadata"].get("uid") == owner.get("uid")
            and not found["metadata"].get("deletionTimestamp")
        ):
            return None
        return job_runs.DELETED_REASON

    async def ended(self, end: launcher.AttemptEnd) -> None:
        reason = _REASONS.get(end.outcome.state)
        dead_lettered = end.run_state == run_state.RunState.DEAD_LETTERED
        pod_deleted = (
            end.outcome.state is PodState.GONE
            and end.outcome.reason != launcher.OWNER_DELETED
            and end.run_state == run_state.RunState.CANCELLED
        )
        if reason is None and not dead_lettered and not pod_deleted:
            return
        try:
            involved = await self._involved(end)
        except Exception:
            log.exception("could not find the object of run %s", end.run_id)
            return
        if involved is None:
            return
        what = f"run {end.run_id} attempt {end.attempt}: Pod {end.pod_name}"
        key = f"run-{end.run_id}-{end.attempt}"
        if reason is not None:
            self.ctx.recorder.record(
                involved, events.WARNING, reason, f"{what} {end.outcome.describe()}", key=key
            )
        if pod_deleted:
            # Normal: someone deleted the Pod on purpose and the job's policy makes that a
            # cancel, an outcome asked for, like a Killing of a deleted Pod, not a failure.
            self.ctx.recorder.record(
                involved,
                events.NORMAL,
                EventReason.POD_DELETED,
                f"{what} was deleted before it ended; the run is cancelled"
                " (podDeletionPolicy: Cancel)",
                key=key,
            )
        if dead_lettered:
            self.ctx.recorder.record(
                involved,
                events.WARNING,
                EventReason.DEAD_LETTERED,
                events.dead_lettered_message(end.run_id, end.outcome.describe()),
                key=events.dead_lettered_key(end.run_id, end.attempt),
            )

    async def forged(self, pod: Mapping[str, Any], run_id: int, attempt: int) -> None:
        metadata = pod.get("metadata") or {}
        self.ctx.recorder.record(
            {"apiVersion": "v1", "kind": "Pod", "metadata": metadata},
            events.WARNING,
            EventReason.FORGED_POD,
            f"this Pod carries the labels of run {run_id} attempt {attempt} but is not the Pod"
            " Sundial created for it; its end was ignored",
            key=f"run-{run_id}-{attempt}",
        )

    async def _involved(self, end: launcher.AttemptEnd) -> Mapping[str, Any] | None:
        """The object an attempt's Events go on: its user JobRun, else its ScheduledJob."""
        user_run = self.user_job_run(end.idempotency_key)
        if user_run is not None:
            return {
                "apiVersion": common.API_VERSION,
                "kind": job_run.KIND,
                "metadata": user_run["metadata"],
            }
        body = await self.scheduled_job(end.namespace, end.job_name, end.job_id)
        if body is None:
            return None
        return {
            "apiVersion": common.API_VERSION,
            "kind": scheduled_job.KIND,
            "metadata": body["metadata"],
        }


def _reference(kind: str, body: Mapping[str, Any]) -> Mapping[str, Any]:
    return {
        "apiVersion": common.API_VERSION,
        "kind": kind,
        "name": body["metadata"]["name"],
        "uid": body["metadata"]["uid"],
        "blockOwnerDeletion": False,
    }

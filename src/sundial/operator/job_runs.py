"""JobRuns a user created: each is one run in PostgreSQL, submitted once, then followed.

``reconcile`` is idempotent and safe to call at any time, from kopf's handlers (the fast path)
and from every status-mirror pass (the level-triggered safety net that makes restarts and
lost events harmless):

* not submitted yet: resolve the job (``jobRef`` -> that ScheduledJob's job definition, or the
  inline ``job`` -> a definition of its own keyed by the JobRun's uid), resolve ``dependsOn``
  names to run ids, and submit with the idempotency key (``idempotencyKey`` scoped to the
  namespace, else the uid) - so re-applying a manifest, or submitting twice after a crash,
  creates one run. An upstream JobRun that has no run yet means "try again on the next pass",
  unless ``dependsOn`` forms a cycle (below);
* ``cancel: true``: cancel the run (or never submit it);
* the ``sundial.dev/replay`` annotation: replay the run (``replays``);
* otherwise: copy the run's state into ``status`` (with the kstatus and Job-style conditions of
  ``status.job_run_conditions``), and delete the object
  ``ttlSecondsAfterFinished`` after the run finished (the run stays in PostgreSQL).

**dependsOn cycles.** The store cannot hold one: a run depends only on runs that exist, and a
run's edges never change (``store.dependencies``). So a cycle lives among JobRun objects that
have no run: each member waits for an upstream that waits for it, and no member can ever be
submitted (by induction: a member's run needs its upstream's run first). That makes detection
race-free where the graph is known - the namespace's unsubmitted JobRuns - whichever member
reconciles first and however concurrently they were created: each member finds the whole
cycle on its own. Every member, and every JobRun waiting on one, is marked Stalled
(``DependencyCycle``, with the cycle in the message) and gets a Warning Event. ``dependsOn``
may be edited until the run is submitted (a CRD transition rule), so a user breaks the cycle
by editing one member; the next pass submits what can go.

``delete`` runs behind the finalizer when a user JobRun is deleted: a run that has not
finished is cancelled through the store's fenced cancel (``runs.cancel``), as deleting a Job
stops its work; a finished run is left as it is. The run itself stays in PostgreSQL
(docs/adr/0013-job-run-owns-its-pods.md, amendment).
"""

from __future__ import annotations

import datetime
import hashlib
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import pydantic

from sundial.api import common, conditions, job_run, messages
from sundial.api.conditions import ConditionReason, ConditionType
from sundial.operator import context, events, kube, replays, scheduled_jobs, status
from sundial.scheduling import dependency_cycles, run_state
from sundial.store import errors as store_errors
from sundial.store import history, runs, schedules

__all__ = ["DELETED_REASON", "delete", "reconcile", "run_key"]

log = logging.getLogger("sundial.operator.jobrun")

Wanted = status.Wanted

#: The ``last_error`` of a run cancelled because its user JobRun was deleted.
DELETED_REASON = "cancelled: the JobRun was deleted"


async def reconcile(
    ctx: context.Context, body: Mapping[str, Any], run: history.RunView | None = None
) -> None:
    """Bring one user JobRun and its run in line; ``run``: the run if the caller read it."""
    metadata = body["metadata"]
    current = body.get("status") or {}
    generation = metadata.get("generation")
    problem = common.metadata_problem(body)
    if problem is None:
        try:
            spec = job_run.JobRunSpec.model_validate(body.get("spec") or {})
        except pydantic.ValidationError as error:
            problem = messages.describe(error)
    if problem is not None:
        await _report(
            ctx, body, (ConditionType.STALLED, "True", ConditionReason.INVALID_SPEC, problem)
        )
        return
    # Registered before the submit: the pod launcher may claim the run at once, and its hooks
    # look the JobRun up by this key (the Pods' owner, the Events' object).
    ctx.job_runs[run_key(metadata, spec.idempotency_key)] = body
    run_id = current.get("runId")
    if run_id is None:
        uid = str(metadata["uid"])
        if uid in ctx.submitting or _submitted_since(ctx, body):
            # A handler or a mirror pass submits it now, or did since ``body`` was read: the
            # key would make a second submit harmless, not free (a statement and a patch).
            return
        ctx.submitting.add(uid)
        try:
            run_id = await _submit_unless_cancelled(ctx, body, spec)
        finally:
            ctx.submitting.discard(uid)
        if run_id is None:
            return
        run = None
    run_number = int(run_id)
    if run is None:
        run = (await history.runs(ctx.pool, [run_number], hot=ctx.hot_queue)).get(run_number)
    asked = await replays.honour(ctx, body, run_number)
    if asked:
        run = (await history.runs(ctx.pool, [run_number], hot=ctx.hot_queue)).get(run_number)
    if run is None:
        if asked:
            await replays.settle(ctx, body)  # refused (an Event says why): nothing to show
        return  # archived away and dropped: leave the last status as it is
    if spec.cancel and run.state in run_state.ACTIVE:
        result = await runs.cancel(
            ctx.pool, run_number, reason="cancelled: spec.cancel is true", hot=ctx.hot_queue
        )
        log.info("JobRun cancelled", extra={"object": _ref(body), "result": str(result)})
        run = (await history.runs(ctx.pool, [run_number], hot=ctx.hot_queue)).get(run_number) or run
    desired = status.job_run_status(run, generation=generation)
    await _write(
        ctx,
        body,
        desired,
        [
            (ConditionType.READY, "True", ConditionReason.SUBMITTED, f"run {run.id}"),
            *status.job_run_conditions(run),
        ],
    )
    if asked:
        await replays.settle(ctx, body)  # after the status shows the replay (or its refusal)
    events.record_unclaimable(ctx.recorder, body, desired, current)
    warning = events.ENDED_WARNINGS.get(desired["phase"])
    if warning and desired["phase"] != current.get("phase"):
        ctx.recorder.record(
            body,
            events.WARNING,
            warning,
            events.dead_lettered_message(run.id, run.last_error or run.failure_reason),
            key=events.dead_lettered_key(run.id, run.attempt),
        )
    await _expire(ctx, body, spec, run)


async def _submit_unless_cancelled(
    ctx: context.Context, body: Mapping[str, Any], spec: job_run.JobRunSpec
) -> str | None:
    """Submit the run (its id), or show the JobRun cancelled (``None``) if it asks to be."""
    if not spec.cancel:
        return await _submit(ctx, body, spec)
    cancelled = ConditionReason.CANCELLED
    await _write(
        ctx,
        body,
        {"phase": "Cancelled", "reason": "cancelled before it was submitted"},
        [
            (ConditionType.READY, "False", cancelled, "cancelled before submission"),
            (ConditionType.COMPLETE, "False", cancelled, "cancelled before submission"),
            (ConditionType.FAILED, "True", cancelled, "cancelled before submission"),
        ],
    )
    return None


def _created(ctx: context.Context, metadata: Mapping[str, Any]) -> datetime.datetime:
    """When the JobRun was created: the API server's stamp (now, for a body that has none)."""
    stamp = metadata.get("creationTimestamp")
    if not stamp:
        return ctx.clock.now()
    return datetime.datetime.fromisoformat(str(stamp))


async def _submit(
    ctx: context.Context, body: Mapping[str, Any], spec: job_run.JobRunSpec
) -> str | None:
    metadata = body["metadata"]
    namespace = metadata["namespace"]
    uid = str(metadata["uid"])
    too_far = job_run.run_at_problem(spec, _created(ctx, metadata))
    if too_far is not None:  # before anything is looked up or stored: nothing will be
        await _report(
            ctx, body, (ConditionType.STALLED, "True", ConditionReason.INVALID_SPEC, too_far)
        )
        return None
    args: dict[str, Any] = {}
    owner: Mapping[str, Any] | None = None
    if spec.job_ref is not None:
        owner = await ctx.api.get(kube.SCHEDULED_JOBS, namespace, spec.job_ref.name)
        if owner is None:
            message = (
                f"spec.jobRef.name: there is no ScheduledJob {spec.job_ref.name!r} in {namespace}"
            )
            await _report(
                ctx, body, (ConditionType.STALLED, "True", ConditionReason.JOB_NOT_FOUND, message)
            )
            return None
        job: uuid.UUID | str = uuid.UUID(str(owner["metadata"]["uid"]))
        handler = (owner.get("spec") or {}).get("handler") or {}
        args.update(handler.get("args") or {})
    else:
        assert spec.job is not None
        job = uuid.UUID(uid)
        try:
            await schedules.upsert_job(
                ctx.pool,
                uid=job,
                namespace=namespace,
                name=f"jobrun:{uid}",
                generation=int(metadata.get("generation") or 0),
                spec=spec.job,
            )
        except store_errors.RefusedValueError as error:  # a backstop: the models refuse these
            await _report(
                ctx, body, (ConditionType.STALLED, "True", ConditionReason.INVALID_SPEC, str(error))
            )
            return None
        if spec.job.handler is not None:
            args.update(spec.job.handler.args or {})
    args.update(spec.args or {})
    upstream: list[int] = []
    for name in spec.depends_on or ():
        parent = await ctx.api.get(kube.JOB_RUNS, namespace, name)
        parent_run = ((parent or {}).get("status") or {}).get("runId")
        if parent_run is None:
            await _wait_for_upstream(ctx, body, spec, name)
            return None
        upstream.append(int(parent_run))
    run_at = spec.run_at
    if run_at is None and spec.delay_seconds:
        run_at = _created(ctx, metadata) + datetime.timedelta(seconds=spec.delay_seconds)
    key = run_key(metadata, spec.idempotency_key)
    try:
        try:
            submitted = await _submit_run(ctx, job, args, spec, run_at, key, upstream)
        except store_errors.UnknownJobError:
            if owner is None:
                raise
            # The ScheduledJob exists but is not stored yet: both were applied together and
            # this JobRun's event came first. Store the owner here (the same idempotent upsert
            # its own handler makes) instead of reporting JobNotFound until the next mirror
            # pass, by which time a delayed run would have missed showing Pending.
            await scheduled_jobs.reconcile_once(ctx, owner)
            submitted = await _submit_run(ctx, job, args, spec, run_at, key, upstream)
    except store_errors.UnknownJobError as error:
        await _report(
            ctx, body, (ConditionType.STALLED, "True", ConditionReason.JOB_NOT_FOUND, str(error))
        )
        return None
    except store_errors.IdempotencyConflictError as error:
        # The key is the field to change: say so, as every Stalled message names its field.
        message = f"spec.idempotencyKey: {error}"
        await _report(
            ctx, body, (ConditionType.STALLED, "True", ConditionReason.INVALID_SPEC, message)
        )
        return None
    except store_errors.QuotaExceededError as error:
        await _wait_for_quota(ctx, body, error)
        return None
    except store_errors.InvalidSubmissionError as error:
        await _report(
            ctx, body, (ConditionType.STALLED, "True", ConditionReason.INVALID_SPEC, str(error))
        )
        return None
    if submitted.created:
        ctx.recorder.record(
            body,
            events.NORMAL,
            conditions.EventReason.SUCCESSFUL_CREATE,
            f"created run {submitted.run_id}",
        )
    log.info(
        "JobRun submitted",
        extra={"object": _ref(body), "run_id": submitted.run_id, "run_created": submitted.created},
    )
    patched = await ctx.api.patch_status(
        kube.JOB_RUNS, namespace, metadata["name"], {"runId": str(submitted.run_id)}
    )
    if patched is None:
        # The JobRun went while its run was being submitted (deleted before kopf added the
        # finalizer, or its DELETED event handled before this insert committed): nobody
        # follows the run, so it must not run.
        await delete(ctx, body)
        return None
    ctx.job_run_cache.observe("MODIFIED", patched)  # the cache knows the runId now
    return str(submitted.run_id)


def _submitted_since(ctx: context.Context, body: Mapping[str, Any]) -> bool:
    """True if the newest body of this JobRun the cache holds has a runId ``body`` lacks."""
    metadata = body["metadata"]
    latest = ctx.job_run_cache.get(metadata["namespace"], metadata["name"])
    return (
        latest is not None
        and latest["metadata"].get("uid") == metadata["uid"]
        and (latest.get("status") or {}).get("runId") is not None
    )


async def _submit_run(
    ctx: context.Context,
    job: uuid.UUID | str,
    args: dict[str, Any],
    spec: job_run.JobRunSpec,
    run_at: datetime.datetime | None,
    key: str,
    upstream: list[int],
) -> runs.Submitted:
    return await runs.submit(
        ctx.pool,
        job,
        args=args,
        priority=spec.priority,
        run_at=run_at,
        idempotency_key=key,
        depends_on=upstream,
        fire_time=spec.fire_time,
    )


async def _wait_for_upstream(
    ctx: context.Context, body: Mapping[str, Any], spec: job_run.JobRunSpec, name: str
) -> None:
    """Upstream ``name`` has no run: wait for it, or stall if it never can (a cycle)."""
    metadata = body["metadata"]
    listed = await ctx.api.list(kube.JOB_RUNS, [metadata["namespace"]])
    graph = {
        other["metadata"]["name"]: list((other.get("spec") or {}).get("dependsOn") or ())
        for other in listed
        if (other.get("status") or {}).get("runId") is None
        and (other["metadata"].get("labels") or {}).get(context.LABEL_MIRROR) != "true"
    }
    graph[metadata["name"]] = list(spec.depends_on or ())  # this body may be newer than the list
    cycle = dependency_cycles.find_cycle(graph, metadata["name"])
    if cycle is not None:
        message = dependency_cycles.cycle_message(metadata["name"], cycle)
        await _report(
            ctx,
            body,
            (ConditionType.STALLED, "True", ConditionReason.DEPENDENCY_CYCLE, message),
            (ConditionType.RECONCILING, "False", ConditionReason.AS_EXPECTED, ""),
        )
        return
    message = f"spec.dependsOn: JobRun {name!r} has no run yet; waiting for it"
    await _report(
        ctx,
        body,
        (ConditionType.RECONCILING, "True", ConditionReason.WAITING_FOR_UPSTREAM, message),
        (ConditionType.STALLED, "False", ConditionReason.AS_EXPECTED, ""),
    )


async def _wait_for_quota(
    ctx: context.Context, body: Mapping[str, Any], error: store_errors.QuotaExceededError
) -> None:
    """The namespace is at its active-run quota: wait, submitted by a later mirror pass once
    the maintenance pass has counted the runs that ended. One Warning Event per wait: two
    passes may both read a body from before the condition was written (the create handler and
    a mirror pass side by side), so the Event is keyed by the JobRun's uid (a JobRun waits for
    the quota at most once: it is never unsubmitted) and the second report is the same Event."""
    message = (
        f"namespace {error.namespace} holds as many active runs as its quota allows "
        f"({error.quota}); this JobRun is submitted once some have ended"
    )
    waiting = any(
        isinstance(c, Mapping)
        and c.get("type") == ConditionType.RECONCILING
        and c.get("reason") == ConditionReason.QUOTA_EXCEEDED
        for c in ((body.get("status") or {}).get("conditions") or [])
    )
    if not waiting:
        ctx.recorder.record(
            body,
            events.WARNING,
            conditions.EventReason.QUOTA_EXCEEDED,
            str(error),
            key=str(body["metadata"].get("uid") or body["metadata"]["name"]),
        )
    await _report(
        ctx,
        body,
        (ConditionType.RECONCILING, "True", ConditionReason.QUOTA_EXCEEDED, message),
        (ConditionType.STALLED, "False", ConditionReason.AS_EXPECTED, ""),
    )


async def delete(ctx: context.Context, body: Mapping[str, Any]) -> None:
    """A user JobRun is being deleted: cancel its run unless it finished (or another JobRun
    that is not being deleted follows the same run, through the same ``idempotencyKey``)."""
    metadata = body["metadata"]
    spec = body.get("spec") or {}
    key = run_key(metadata, spec.get("idempotencyKey"))
    if ctx.job_runs.get(key, {}).get("metadata", {}).get("uid") == metadata["uid"]:
        del ctx.job_runs[key]
    run_id = (body.get("status") or {}).get("runId")
    # No runId yet: the submit may have committed without the status write that follows it.
    run_number = int(run_id) if run_id is not None else await runs.run_for_key(ctx.pool, key)
    if run_number is None:
        return
    if spec.get("idempotencyKey") and await _followed_elsewhere(ctx, body):
        log.info("deleted JobRun's run is followed by another JobRun", extra={"object": _ref(body)})
        return
    try:
        result = await runs.cancel(ctx.pool, run_number, reason=DELETED_REASON, hot=ctx.hot_queue)
    except store_errors.NoSuchRunError:
        return  # archived and dropped: long finished
    log.info(
        "JobRun deleted",
        extra={"object": _ref(body), "run_id": run_number, "result": str(result)},
    )


async def _followed_elsewhere(ctx: context.Context, body: Mapping[str, Any]) -> bool:
    """True if a user JobRun other than ``body``, not being deleted, has its idempotencyKey."""
    metadata = body["metadata"]
    key = (body.get("spec") or {}).get("idempotencyKey")
    for other in await ctx.api.list(kube.JOB_RUNS, [metadata["namespace"]]):
        other_metadata = other["metadata"]
        if (
            other_metadata.get("uid") != metadata["uid"]
            and not other_metadata.get("deletionTimestamp")
            and (other_metadata.get("labels") or {}).get(context.LABEL_MIRROR) != "true"
            and (other.get("spec") or {}).get("idempotencyKey") == key
        ):
            return True
    return False


def run_key(metadata: Mapping[str, Any], idempotency_key: str | None) -> str:
    """The idempotency key a user JobRun submits its run with: ``spec.idempotencyKey`` scoped
    to the namespace, else the JobRun's uid."""
    if idempotency_key:
        return runs.scoped_key(str(metadata["namespace"]), idempotency_key)
    return str(metadata["uid"])


async def _expire(
    ctx: context.Context, body: Mapping[str, Any], spec: job_run.JobRunSpec, run: history.RunView
) -> None:
    if spec.ttl_seconds_after_finished is None or run.finished_at is None:
        return
    expires = run.finished_at + datetime.timedelta(seconds=spec.ttl_seconds_after_finished)
    if ctx.clock.now() >= expires:
        metadata = body["metadata"]
        await ctx.api.delete(kube.JOB_RUNS, metadata["namespace"], metadata["name"])
        log.info("JobRun deleted after ttlSecondsAfterFinished", extra={"object": _ref(body)})


async def _report(
    ctx: context.Context, body: Mapping[str, Any], condition: Wanted, *others: Wanted
) -> None:
    """Write ``condition`` (and ``others``); a new Stalled reason or message also gets a
    Warning Event. Two passes may both read a body from before the condition was written (the
    create handler beside a mirror pass), so the Event is keyed by the JobRun's uid and what
    it says: the second report of the same fact is the same Event, not a second one."""
    before = ((body.get("status") or {}).get("conditions")) or []
    seen = any(
        isinstance(c, Mapping)
        and c.get("type") == condition[0]
        and c.get("reason") == condition[2]
        and c.get("status") == condition[1]
        and c.get("message") == condition[3][: conditions.MAX_MESSAGE_LENGTH]
        for c in before
    )
    if condition[0] == ConditionType.STALLED and condition[1] == "True" and not seen:
        ctx.recorder.record(
            body,
            events.WARNING,
            condition[2],
            condition[3],
            key=_fact_key(body, condition[2], condition[3]),
        )
    await _write(ctx, body, {}, [condition, *others])


def _fact_key(body: Mapping[str, Any], reason: str, message: str) -> str:
    """This JobRun (by uid, so a JobRun made again under its name is told apart) saying this."""
    metadata = body["metadata"]
    said = hashlib.sha256(f"{reason}\n{message}".encode()).hexdigest()[:12]
    return f"{metadata.get('uid') or metadata['name']}.{said}"


async def _write(
    ctx: context.Context,
    body: Mapping[str, Any],
    desired: dict[str, Any],
    wanted: list[Wanted],
) -> None:
    metadata = body["metadata"]
    current = body.get("status") or {}
    desired = dict(desired)
    desired["conditions"] = status.conditions_with(
        current, wanted, now=ctx.clock.now(), generation=metadata.get("generation")
    )
    patch = status.changes(current, desired)
    if patch:
        await ctx.api.patch_status(kube.JOB_RUNS, metadata["namespace"], metadata["name"], patch)


def _ref(body: Mapping[str, Any]) -> str:
    metadata = body.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


async def cancel_run(ctx: context.Context, body: Mapping[str, Any], run_id: int) -> None:
    """``spec.cancel`` on a mirrored JobRun: cancel its run (the next pass shows the result)."""
    result = await runs.cancel(
        ctx.pool, run_id, reason="cancelled: spec.cancel is true", hot=ctx.hot_queue
    )
    log.info("mirrored JobRun cancelled", extra={"object": _ref(body), "result": str(result)})

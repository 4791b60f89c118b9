"""ScheduledJob objects into ``job_definitions`` and ``schedules`` rows, keyed by uid.

``reconcile`` is idempotent and level-triggered: it parses the object, upserts its schedule
(``store.schedules.upsert`` tracks the generation, so an old generation arriving late changes
nothing) and records a Warning Event when the spec cannot be acted on. What the schema could
not check - the cron expression, the time zone, the byte size of ``args`` - never raises: it
becomes the Stalled condition (written by the status mirror, see ``status``) and an Event, and
every other object goes on being reconciled.

``delete`` deactivates the schedule: no new fires, and runs already started are left to
finish (their history stays in PostgreSQL; the mirrored JobRuns go with their owner). See
docs/adr/0008-operator.md for why runs are not cancelled. It runs behind kopf's finalizer, and
also on the watch's DELETED event: an object deleted before kopf added the finalizer never
reaches the delete handler, and its schedule would fire for ever. A store that was under way
when the deletion arrived (a mirror pass that read the object just before) deactivates the
schedule again after its upsert (``Context.deleted_schedules``). An object deleted while no
operator watched (its finalizer removed by hand) sends no event at all: the status mirror
deactivates its schedule after the next LIST that does not return it
(``Mirror._deactivate_orphans``).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from sundial.api import conditions, scheduled_job
from sundial.operator import context, events
from sundial.store import errors as store_errors
from sundial.store import runs, schedules

__all__ = ["delete", "reconcile", "reconcile_once", "run_now"]

log = logging.getLogger("sundial.operator.scheduledjob")


async def reconcile(ctx: context.Context, body: Mapping[str, Any]) -> None:
    """Store the object's current generation (or report why it cannot be stored)."""
    spec, problem = scheduled_job.parse(body)
    if spec is None:
        assert problem is not None
        ctx.recorder.record(body, events.WARNING, conditions.ConditionReason.INVALID_SPEC, problem)
        log.warning("invalid ScheduledJob", extra={"object": _ref(body), "error": problem})
        ctx.wake.set()
        return
    metadata = body["metadata"]
    try:
        result = await schedules.upsert(
            ctx.pool,
            uid=metadata["uid"],
            namespace=metadata["namespace"],
            name=metadata["name"],
            generation=int(metadata.get("generation") or 0),
            spec=spec,
            now=ctx.clock.now(),
        )
    except store_errors.NameTakenError as error:
        if error.by_schedule:
            raise  # the holder's deactivation is on its way: the next pass tries again
        taken = conditions.ConditionReason.NAME_TAKEN
        ctx.unstorable[str(metadata["uid"])] = (taken, str(error))
        ctx.recorder.record(body, events.WARNING, taken, str(error), key=metadata["name"])
        log.warning("ScheduledJob name taken", extra={"object": _ref(body), "error": str(error)})
        ctx.wake.set()
        return
    except store_errors.RefusedValueError as error:  # a backstop: the models refuse these
        ctx.recorder.record(
            body, events.WARNING, conditions.ConditionReason.INVALID_SPEC, str(error)
        )
        log.warning(
            "ScheduledJob refused by the store", extra={"object": _ref(body), "error": str(error)}
        )
        return
    ctx.unstorable.pop(str(metadata["uid"]), None)
    if metadata["uid"] in ctx.deleted_schedules:
        # Deleted while this store was under way: the upsert may have re-activated it.
        await schedules.deactivate(ctx.pool, uuid.UUID(str(metadata["uid"])))
        log.info("ScheduledJob deleted while it was stored", extra={"object": _ref(body)})
        return
    if result.stalled is not None:
        reason = conditions.EventReason(result.stalled.reason)  # a member for every error (tested)
        ctx.recorder.record(body, events.WARNING, reason, str(result.stalled))
        log.warning(
            "ScheduledJob stalled", extra={"object": _ref(body), "error": str(result.stalled)}
        )
    elif result.applied:
        log.info(
            "ScheduledJob stored",
            extra={
                "object": _ref(body),
                "generation": metadata.get("generation"),
                "schedule_created": result.created,
            },
        )
    ctx.wake.set()


async def reconcile_once(ctx: context.Context, body: Mapping[str, Any]) -> None:
    """``reconcile`` unless this generation of the object already went through; remembered
    in ``Context.reconciled`` once it did."""
    metadata = body["metadata"]
    generation = metadata.get("generation")
    if ctx.reconciled.get(metadata["uid"]) == generation:
        return
    await reconcile(ctx, body)
    ctx.reconciled[metadata["uid"]] = generation


async def delete(ctx: context.Context, body: Mapping[str, Any]) -> None:
    """Stop firing; active runs finish (see the module docstring)."""
    ctx.deleted_schedules.add(str(body["metadata"]["uid"]))
    ctx.unstorable.pop(str(body["metadata"]["uid"]), None)
    schedule_id = uuid.UUID(str(body["metadata"]["uid"]))
    await schedules.deactivate(ctx.pool, schedule_id)
    ctx.missed.pop(schedule_id, None)
    log.info("ScheduledJob deleted; schedule deactivated", extra={"object": _ref(body)})


async def run_now(ctx: context.Context, body: Mapping[str, Any]) -> bool:
    """Honour ``sundial.dev/run-now``: one run now, then remove the annotation.

    The run is a fire of the schedule at the current instant (so concurrency policy and the
    status window count it) with an idempotency key made of the uid and the annotation's
    value, so handling the same annotation twice (a restart before it was removed) creates
    one run. Returns whether the annotation was there.
    """
    metadata = body["metadata"]
    value = (metadata.get("annotations") or {}).get(context.RUN_NOW_ANNOTATION)
    if value is None:
        return False
    schedule_id = uuid.UUID(str(metadata["uid"]))
    info = await schedules.get(ctx.pool, schedule_id)
    if info is None or not info.active:
        return True  # not stored yet: the next pass tries again
    spec, _ = scheduled_job.parse(body)
    args = dict(spec.handler.args or {}) if spec is not None and spec.handler else {}
    try:
        submitted = await runs.submit(
            ctx.pool,
            schedule_id,
            args=args,
            idempotency_key=runs.scoped_key(f"run-now:{schedule_id}", value, separator=":"),
            schedule_id=schedule_id,
            fire_time=ctx.clock.now(),
        )
    except store_errors.StoreError as error:
        ctx.recorder.record(body, events.WARNING, "RunNowFailed", str(error))
        submitted = None
    if submitted is not None and submitted.created:
        ctx.recorder.record(
            body,
            events.NORMAL,
            conditions.EventReason.SUCCESSFUL_CREATE,
            f"created run {submitted.run_id} (run-now {value!r})",
        )
    await ctx.api.patch(
        "scheduledjobs",
        metadata["namespace"],
        metadata["name"],
        {"metadata": {"annotations": {context.RUN_NOW_ANNOTATION: None}}},
    )
    ctx.wake.set()
    return True


def _ref(body: Mapping[str, Any]) -> str:
    metadata = body.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"

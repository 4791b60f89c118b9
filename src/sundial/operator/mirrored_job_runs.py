"""A ScheduledJob's mirrored JobRuns made to match its window, and forged mirrors reported.

The mirror (``mirror``) decides, per ScheduledJob, which runs its window holds; ``sync`` writes
the JobRuns that show them: it creates the missing ones (owned by the ScheduledJob, in its
namespace, labelled ``sundial.dev/mirror=true``), patches their status, honours a cancel or a
replay asked on one, and deletes those whose run left the window. Each write holds one of the
pass's write slots (``writes``). A JobRun labelled as a mirror of a ScheduledJob in another
namespace is not the operator's (an ownerReference cannot cross namespaces): ``Forgeries``
reports it once, and nothing here touches it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Mapping
from typing import Any

from sundial.api import common, conditions, job_run, scheduled_job
from sundial.operator import context, events, job_runs, kube, replays, status
from sundial.scheduling import run_state
from sundial.store import history

__all__ = ["Forgeries", "mirrored_body", "owner_uid", "sync"]

log = logging.getLogger("sundial.operator.mirror")


async def sync(
    ctx: context.Context,
    writes: asyncio.Semaphore,
    owner: Mapping[str, Any],
    desired: dict[str, history.RunView],
    existing: dict[str, Mapping[str, Any]],
) -> None:
    """Create, patch and delete ``owner``'s mirrored JobRuns (``existing``, by name) so that
    they show ``desired`` (its window's runs, by JobRun name)."""
    metadata = owner["metadata"]
    pending: list[Awaitable[None]] = []
    for name, run in desired.items():
        pending.append(_upsert(ctx, writes, owner, name, run, existing.get(name)))
    for name in existing:
        if name not in desired:
            pending.append(_delete(ctx, writes, name, metadata))
    await asyncio.gather(*pending)


async def _upsert(
    ctx: context.Context,
    writes: asyncio.Semaphore,
    owner: Mapping[str, Any],
    name: str,
    run: history.RunView,
    current: Mapping[str, Any] | None,
) -> None:
    metadata = owner["metadata"]
    namespace = metadata["namespace"]
    async with writes:
        if current is None:
            body = mirrored_body(owner, name)
            try:
                current = await ctx.api.create(kube.JOB_RUNS, namespace, body)
                ctx.job_run_cache.observe("ADDED", current)
            except Exception as error:
                if not kube.is_conflict(error):
                    raise
                current = await ctx.api.get(kube.JOB_RUNS, namespace, name) or body
        if (current.get("spec") or {}).get("cancel") and run.state in run_state.ACTIVE:
            await job_runs.cancel_run(ctx, current, run.id)
        asked = await replays.honour(ctx, current, run.id)
        if asked:
            run = (await history.runs(ctx.pool, [run.id], hot=ctx.hot_queue)).get(run.id, run)
        generation = current["metadata"].get("generation")
        desired = status.job_run_status(run, generation=generation)
        before = current.get("status") or {}
        desired["conditions"] = status.conditions_with(
            before,
            status.job_run_conditions(run),
            now=ctx.clock.now(),
            generation=generation,
        )
        patch = status.changes(before, desired)
        if patch:
            patched = await ctx.api.patch_status(kube.JOB_RUNS, namespace, name, patch)
            if patched is not None:
                ctx.job_run_cache.observe("MODIFIED", patched)
            events.record_unclaimable(ctx.recorder, owner, desired, before)
            warning = events.ENDED_WARNINGS.get(desired["phase"])
            if warning and before.get("phase") not in (None, desired["phase"]):
                ctx.recorder.record(
                    owner,
                    events.WARNING,
                    warning,
                    events.dead_lettered_message(run.id, run.last_error or run.failure_reason),
                    key=events.dead_lettered_key(run.id, run.attempt),
                )
        if asked:  # after the status shows the replay (or its refusal)
            settled = await replays.settle(ctx, current)
            if settled is not None:
                ctx.job_run_cache.observe("MODIFIED", settled)


async def _delete(
    ctx: context.Context, writes: asyncio.Semaphore, name: str, owner_metadata: Mapping[str, Any]
) -> None:
    async with writes:
        await ctx.api.delete(kube.JOB_RUNS, owner_metadata["namespace"], name)


class Forgeries:
    """Reports JobRuns labelled as mirrors of a ScheduledJob in another namespace."""

    def __init__(self, ctx: context.Context) -> None:
        self._ctx = ctx
        self._reported: set[str] = set()  # JobRun UIDs, reported once each

    def report(self, body: Mapping[str, Any], owner_namespace: str) -> None:
        """A JobRun labelled as the mirror of a ScheduledJob in another namespace: the operator
        makes a mirror only beside its ScheduledJob (an ownerReference cannot cross namespaces),
        so someone else wrote it. It is neither synced, cancelled, replayed nor deleted; it gets
        one Warning Event (per operator process) and is otherwise left alone."""
        metadata = body["metadata"]
        uid = str(metadata.get("uid"))
        if uid in self._reported:
            return
        self._reported.add(uid)
        log.warning(
            "ignoring a JobRun labelled as a mirror of a ScheduledJob in another namespace",
            extra={"object": f"{metadata.get('namespace')}/{metadata.get('name')}"},
        )
        self._ctx.recorder.record(
            {"apiVersion": common.API_VERSION, "kind": job_run.KIND, "metadata": metadata},
            events.WARNING,
            conditions.EventReason.FORGED_MIRROR,
            f"labelled {context.LABEL_MIRROR}=true with an owner in namespace {owner_namespace}:"
            " Sundial did not make it, and it changes nothing",
            key=uid,
        )


def owner_uid(body: Mapping[str, Any]) -> uuid.UUID | None:
    """The UID of the ScheduledJob that controls ``body``, from its ownerReferences."""
    for reference in body["metadata"].get("ownerReferences") or ():
        if reference.get("kind") == scheduled_job.KIND and reference.get("controller"):
            return uuid.UUID(str(reference["uid"]))
    return None


def mirrored_body(owner: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A new mirrored JobRun ``name`` of ``owner``: beside it, owned by it, labelled."""
    metadata = owner["metadata"]
    return {
        "apiVersion": common.API_VERSION,
        "kind": job_run.KIND,
        "metadata": {
            "name": name,
            "namespace": metadata["namespace"],
            "labels": {
                context.LABEL_SCHEDULED_JOB: metadata["name"],
                context.LABEL_MIRROR: "true",
            },
            "ownerReferences": [
                {
                    "apiVersion": common.API_VERSION,
                    "kind": scheduled_job.KIND,
                    "name": metadata["name"],
                    "uid": metadata["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {"jobRef": {"name": metadata["name"]}},
    }

"""The ``sundial.dev/replay`` annotation of a JobRun: replay its run, then remove it.

This is how a user without the database DSN replays a dead letter (``kubectl sundial replay``):
the request is an annotation on the JobRun, which RBAC gates like any other write to it
(``patch`` on ``jobruns``), and the operator turns it into the store's ``runs.replay`` - the
same run, back to pending with a fresh retry budget, its next attempt a new fencing token.

Honoured for user JobRuns (``job_runs.reconcile``) and mirrored ones (``mirror``) alike, on the
kopf event or the next mirror pass. The annotation is removed (``settle``) only after the replay
is committed *and* the JobRun's status shows it: whoever watches the JobRun (``kubectl sundial
replay``) reads "annotation gone" as "the operator answered", so a version without the
annotation that still shows the dead letter would be read as a refusal of a replay that
happened. A crash before the removal means the next pass sees the run active again and only
removes the annotation (no second replay, no Warning): a request is handled at most once per
failure.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from sundial.api import job_run
from sundial.api.conditions import EventReason
from sundial.operator import context, events, kube
from sundial.scheduling import run_state
from sundial.store import errors as store_errors
from sundial.store import runs

__all__ = ["honour", "requested", "settle"]

log = logging.getLogger("sundial.operator.replay")


def requested(body: Mapping[str, Any]) -> str | None:
    """The replay request's token, if the JobRun carries one."""
    annotations = (body.get("metadata") or {}).get("annotations") or {}
    token = annotations.get(job_run.REPLAY_ANNOTATION)
    return None if token is None else str(token)


async def honour(ctx: context.Context, body: Mapping[str, Any], run_id: int | None) -> bool:
    """Replay ``run_id`` if ``body`` asks for it; True if it asked (the caller then re-reads the
    run, writes the status, and calls ``settle``)."""
    token = requested(body)
    if token is None:
        return False
    metadata = body["metadata"]
    reference = f"{metadata.get('namespace')}/{metadata.get('name')}"
    if run_id is None:
        ctx.recorder.record(
            body,
            events.WARNING,
            EventReason.REPLAY_REFUSED,
            "the JobRun has no run yet: there is nothing to replay",
        )
    else:
        try:
            attempt = await runs.replay(ctx.pool, run_id)
        except store_errors.NoSuchRunError as error:
            ctx.recorder.record(body, events.WARNING, EventReason.REPLAY_REFUSED, str(error))
        except store_errors.RunNotReplayableError as error:
            # Active: this request was replayed before a restart, or the run is on its way.
            if error.state not in run_state.ACTIVE:
                ctx.recorder.record(body, events.WARNING, EventReason.REPLAY_REFUSED, str(error))
            log.info(
                "replay not taken", extra={"object": reference, "run_id": run_id, "why": str(error)}
            )
        else:
            ctx.recorder.record(
                body,
                events.NORMAL,
                EventReason.REPLAYED,
                f"run {run_id} replayed (request {token}): pending with a fresh retry budget; "
                f"its next attempt is {attempt + 1}",
            )
            log.info("run replayed", extra={"object": reference, "run_id": run_id})
    return True


async def settle(ctx: context.Context, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Remove the replay request from ``body`` once its answer is in the status; the patched
    JobRun (None if it is gone or carried no request)."""
    if requested(body) is None:
        return None
    metadata = body["metadata"]
    patched: Mapping[str, Any] | None = await ctx.api.patch(
        kube.JOB_RUNS,
        metadata["namespace"],
        metadata["name"],
        {"metadata": {"annotations": {job_run.REPLAY_ANNOTATION: None}}},
    )
    return patched

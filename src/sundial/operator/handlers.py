"""kopf handlers: the fast path from a watch event to PostgreSQL.

Registered on ``registry`` (not kopf's global one) so that importing this module has no side
effect on other kopf operators in the same process. Each handler delegates to a module that is
idempotent (``scheduled_jobs``, ``job_runs``) and wakes the status mirror, which is the
level-triggered path that writes every status: a handler that never ran (the operator was
down) or ran twice (a restart) leaves the same end state.

* Every ScheduledJob event feeds ``Context.scheduled_job_cache`` (which the mirror reads
  instead of LISTing) and wakes the mirror, whose pass stores each generation not stored yet
  (``scheduled_jobs.reconcile_once``; after a start every generation is one: that is the
  resume); delete (behind our finalizer ``sundial.dev/finalizer``) ->
  ``scheduled_jobs.delete``.
* Every JobRun event feeds ``Context.job_run_cache``; for JobRuns a user created (mirrored
  ones carry ``sundial.dev/mirror=true``), each generation once -> ``job_runs.reconcile``, in
  one of two lanes: JobRuns not submitted yet (``Context.submissions``) and the rest
  (``Context.stores``), so a submission never queues behind refreshes; while one is queued
  or under way the mirror holds its writes (``Context.submissions_quiet``, 5 s at most).
  kopf's initial listing of a submitted JobRun is left to the mirror, which follows those
  every pass;
  delete (behind the same finalizer, which only user JobRuns get) -> ``job_runs.delete``,
  which cancels a run that has not finished.
* Low-level ``on.event`` handlers, not ``on.create``/``on.update``: kopf keeps no diff base
  and writes no per-object annotation for them (docs/adr/0027-operator-memory.md). A JobRun
  handler that fails is not retried by kopf; the mirror follows user JobRuns every pass.

The finalizer makes a deletion while the operator is down wait for it, and keeps the JobRun,
so the garbage collector keeps its Pods, until the cancel is committed
(docs/adr/0013-job-run-owns-its-pods.md, amendment).

The process-wide ``context.Context`` arrives in kopf's ``memo`` as ``memo.context``, and the
process's stop event as ``memo.stop``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Any

import kopf

from sundial.api import common, job_run
from sundial.operator import context, job_runs, kube, scheduled_jobs

__all__ = ["FINALIZER", "registry", "settings"]

FINALIZER = "sundial.dev/finalizer"
ANNOTATION_PREFIX = "sundial.dev"

registry = kopf.OperatorRegistry()

_SCHEDULED_JOBS = (common.GROUP, common.VERSION, kube.SCHEDULED_JOBS)
_JOB_RUNS = (common.GROUP, common.VERSION, kube.JOB_RUNS)
_USER_RUNS = {context.LABEL_MIRROR: kopf.ABSENT}


class _NoDiffBase(kopf.DiffBaseStorage):
    """Remembers nothing: every event looks new to kopf, and only ``on.event`` and
    ``on.delete`` handlers are registered, which need no diff."""

    def build(self, *, body: Any, extra_fields: Any = None) -> Any:
        return kopf.BodyEssence()

    def fetch(self, *, body: Any) -> Any:
        return None

    def store(self, *, body: Any, patch: Any, essence: Any) -> None:
        return None


def settings() -> Any:
    """kopf settings that keep our own prefixes and leave ``status`` to us."""
    configured = kopf.OperatorSettings()
    configured.persistence.finalizer = FINALIZER
    configured.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix=ANNOTATION_PREFIX
    )
    # No create/update handlers, so no diff base: kopf would otherwise patch a copy of every
    # object into its annotations, and hold and compare one per event (ADR 0027).
    configured.persistence.diffbase_storage = _NoDiffBase()
    # Handler successes would be one Event per object per change; our own Events say more.
    configured.posting.level = logging.WARNING
    configured.execution.max_workers = 8
    return configured


def _context(memo: Any) -> context.Context:
    ctx: context.Context = memo.context
    return ctx


@kopf.on.login(registry=registry)
def login(**kwargs: Any) -> Any:
    """In a Pod, its ServiceAccount; elsewhere ``$KUBECONFIG`` (or ~/.kube/config).

    In a Pod the API server is reached where Kubernetes tells every Pod it is,
    ``$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``, as the kubernetes client does:
    kopf's own ServiceAccount login names ``kubernetes.default.svc``, which only cluster DNS
    resolves. Without it (a ``hostNetwork`` Pod without ``ClusterFirstWithHostNet``, a node with
    no cluster DNS) kopf never connected, and only the status mirror's passes, which use the
    kubernetes client, submitted JobRuns: tens of seconds late."""
    found = kopf.login_with_service_account(**kwargs)
    if found is None:
        return kopf.login_with_kubeconfig(**kwargs)
    server = in_cluster_server(os.environ)
    return dataclasses.replace(found, server=server) if server else found


def in_cluster_server(environ: Any) -> str | None:
    """The API server's URL from a Pod's ``KUBERNETES_SERVICE_HOST``/``_PORT``, or None."""
    host = environ.get("KUBERNETES_SERVICE_HOST")
    port = environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


@kopf.on.cleanup(registry=registry)
async def stopping(memo: Any, **_: Any) -> None:
    """kopf is stopping (it owns SIGTERM): stop the loops beside it now, so they are done
    before kopf cancels every task it considers its own."""
    memo.stop.set()


@kopf.on.event(*_SCHEDULED_JOBS, registry=registry)
async def scheduled_job_event(event: Any, body: Any, memo: Any, **_: Any) -> None:
    """Keep the cache and wake the mirror, which stores each generation once."""
    ctx = _context(memo)
    plain = kube.plain(body)
    kind = event.get("type")  # None: kopf's initial listing
    ctx.scheduled_job_cache.observe(kind, plain)
    metadata = plain["metadata"]
    if kind == "DELETED":
        ctx.reconciled.pop(metadata["uid"], None)
        # Also here, not only behind the finalizer: an object deleted before kopf added it
        # never reaches the delete handler (scheduled_jobs' docstring). Idempotent.
        async with ctx.stores:
            await scheduled_jobs.delete(ctx, plain)
        return
    if metadata.get("deletionTimestamp"):
        return  # the delete handler's
    if ctx.reconciled.get(metadata["uid"]) != metadata.get("generation"):
        # Stored by the mirror's next pass (woken now), not here: a handler waiting for the
        # pool keeps its event's bodies alive, and 10,000 of them waiting at once were most
        # of the operator's peak (ADR 0027).
        ctx.wake.set()


@kopf.on.delete(*_SCHEDULED_JOBS, registry=registry)
async def scheduled_job_deleted(body: Any, memo: Any, **_: Any) -> None:
    await scheduled_jobs.delete(_context(memo), kube.plain(body))


@kopf.on.event(*_JOB_RUNS, registry=registry)
async def job_run_event(event: Any, body: Any, memo: Any, **_: Any) -> None:
    """Keep the cache; hand each generation of a user JobRun to ``job_runs.reconcile`` once
    (the mirror follows user JobRuns on every pass as well)."""
    ctx = _context(memo)
    plain = kube.plain(body)
    kind = event.get("type")
    ctx.job_run_cache.observe(kind, plain)
    metadata = plain["metadata"]
    if kind == "DELETED":
        ctx.reconciled.pop(metadata["uid"], None)
        finished = (plain.get("status") or {}).get("phase") in job_run.ENDED_PHASES
        if (metadata.get("labels") or {}).get(context.LABEL_MIRROR) is None and not finished:
            # Also here, not only behind the finalizer: a JobRun deleted before kopf added it
            # never reaches the delete handler, and its run would go on. Idempotent: a run
            # already cancelled stays as it is. A finished one (every JobRun its TTL deletes)
            # is skipped: nothing to cancel, and no statement or LIST spent on it.
            async with ctx.stores:
                await job_runs.delete(ctx, plain)
        return
    if (metadata.get("labels") or {}).get(context.LABEL_MIRROR) is not None:
        return
    if metadata.get("deletionTimestamp"):
        return
    if ctx.reconciled.get(metadata["uid"]) == metadata.get("generation"):
        return
    submitted = (plain.get("status") or {}).get("runId") is not None
    if submitted and kind is None:
        # kopf's initial listing replays every JobRun: the submitted ones are followed by the
        # mirror's passes, so a restarted operator spends its start submitting the waiting
        # ones, not refreshing a thousand others ahead of them.
        ctx.reconciled[metadata["uid"]] = metadata.get("generation")
        return
    if submitted:
        async with ctx.stores:
            await job_runs.reconcile(ctx, plain)
    else:
        ctx.submission_queued()  # the mirror holds its writes until the burst is submitted
        try:
            async with ctx.submissions:
                await job_runs.reconcile(ctx, plain)
        finally:
            ctx.submission_done()
    ctx.reconciled[metadata["uid"]] = metadata.get("generation")
    ctx.wake.set()


@kopf.on.delete(*_JOB_RUNS, labels=_USER_RUNS, registry=registry, backoff=5)
async def job_run_deleted(body: Any, memo: Any, **_: Any) -> None:
    ctx = _context(memo)
    await job_runs.delete(ctx, kube.plain(body))
    ctx.wake.set()

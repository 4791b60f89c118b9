"""kopf handlers: the fast path from a watch event to PostgreSQL.

Registered on ``registry`` (not kopf's global one) so that importing this module has no side
effect on other kopf operators in the same process. Each handler delegates to a module that is
idempotent (``scheduled_jobs``, ``job_runs``) and wakes the status mirror, which is the
level-triggered path that writes every status: a handler that never ran (the operator was
down) or ran twice (a restart) leaves the same end state.

* ScheduledJob create / update / resume -> ``scheduled_jobs.reconcile``; delete (behind our
  finalizer ``sundial.dev/finalizer``) -> ``scheduled_jobs.delete``.
* JobRun create / update / resume, for JobRuns a user created (mirrored ones carry
  ``sundial.dev/mirror=true`` and are skipped) -> ``job_runs.reconcile``; delete (behind the
  same finalizer, which only user JobRuns get) -> ``job_runs.delete``, which cancels a run
  that has not finished. The finalizer makes a deletion while the operator is down wait for
  it, and keeps the JobRun, so the garbage collector keeps its Pods, until the cancel is
  committed (docs/adr/0013-job-run-owns-its-pods.md, amendment).

The process-wide ``context.Context`` arrives in kopf's ``memo`` as ``memo.context``, and the
process's stop event as ``memo.stop``.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from sundial.api import common
from sundial.operator import context, job_runs, kube, scheduled_jobs

__all__ = ["FINALIZER", "registry", "settings"]

FINALIZER = "sundial.dev/finalizer"
ANNOTATION_PREFIX = "sundial.dev"

registry = kopf.OperatorRegistry()

_SCHEDULED_JOBS = (common.GROUP, common.VERSION, kube.SCHEDULED_JOBS)
_JOB_RUNS = (common.GROUP, common.VERSION, kube.JOB_RUNS)
_USER_RUNS = {context.LABEL_MIRROR: kopf.ABSENT}


def settings() -> Any:
    """kopf settings that keep our own prefixes and leave ``status`` to us."""
    configured = kopf.OperatorSettings()
    configured.persistence.finalizer = FINALIZER
    configured.persistence.progress_storage = kopf.AnnotationsProgressStorage(
        prefix=ANNOTATION_PREFIX
    )
    configured.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=ANNOTATION_PREFIX, key="last-handled-configuration"
    )
    # Handler successes would be one Event per object per change; our own Events say more.
    configured.posting.level = logging.WARNING
    configured.execution.max_workers = 8
    return configured


def _context(memo: Any) -> context.Context:
    ctx: context.Context = memo.context
    return ctx


@kopf.on.login(registry=registry)
def login(**kwargs: Any) -> Any:
    """In a Pod, its ServiceAccount; elsewhere ``$KUBECONFIG`` (or ~/.kube/config)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.cleanup(registry=registry)
async def stopping(memo: Any, **_: Any) -> None:
    """kopf is stopping (it owns SIGTERM): stop the loops beside it now, so they are done
    before kopf cancels every task it considers its own."""
    memo.stop.set()


@kopf.on.create(*_SCHEDULED_JOBS, registry=registry)
@kopf.on.update(*_SCHEDULED_JOBS, registry=registry)
@kopf.on.resume(*_SCHEDULED_JOBS, registry=registry)
async def scheduled_job_changed(body: Any, memo: Any, **_: Any) -> None:
    await scheduled_jobs.reconcile(_context(memo), kube.plain(body))


@kopf.on.delete(*_SCHEDULED_JOBS, registry=registry)
async def scheduled_job_deleted(body: Any, memo: Any, **_: Any) -> None:
    await scheduled_jobs.delete(_context(memo), kube.plain(body))


@kopf.on.create(*_JOB_RUNS, labels=_USER_RUNS, registry=registry)
@kopf.on.update(*_JOB_RUNS, labels=_USER_RUNS, registry=registry)
@kopf.on.resume(*_JOB_RUNS, labels=_USER_RUNS, registry=registry)
async def job_run_changed(body: Any, memo: Any, **_: Any) -> None:
    ctx = _context(memo)
    await job_runs.reconcile(ctx, kube.plain(body))
    ctx.wake.set()


@kopf.on.delete(*_JOB_RUNS, labels=_USER_RUNS, registry=registry, backoff=5)
async def job_run_deleted(body: Any, memo: Any, **_: Any) -> None:
    ctx = _context(memo)
    await job_runs.delete(ctx, kube.plain(body))
    ctx.wake.set()

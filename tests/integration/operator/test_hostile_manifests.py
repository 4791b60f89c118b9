"""Hostile manifests through the operator's reconcile entry points, against a real PostgreSQL.

Manifests are generated from the CRD's own schema with mutations (``crd_admission``), plus
metadata and time zones the apiserver would never send. For each: a good object is stored
first, then the hostile one is applied as an edit of the same uid, and a fresh object is
reconciled too. Each ends stored and scheduled (or submitted), or Stalled with a Warning
Event whose message names the field; nothing raises out of reconcile, nothing hangs (every
call has a timeout) and a rejected edit changes no stored row.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sundial.api import conditions, scheduled_job
from sundial.operator import context, events, job_runs, kube, scheduled_jobs, status
from sundial.scheduling import clock
from sundial.store import pool as store_pool
from sundial.store import schedules
from support import crd_admission
from support.recording_api import RecordingApi

NOW = datetime.datetime(2026, 12, 1, 9, 0, tzinfo=datetime.UTC)
NAMESPACE = "default"
#: A message that starts by naming a field: ``spec.args: …``, ``metadata.uid: …``, and the
#: scheduling layer's ``timeZone: …`` / ``schedule: …``.
NAMES_A_FIELD = re.compile(r"^(spec|metadata)?[.A-Za-z\[\]0-9]*[A-Za-z\]]: ")
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
TABLES = ("job_definitions", "schedules", "job_runs", "job_run_deps", "idempotency_keys")
GOOD_JOB = {"schedule": "*/5 * * * *", "handler": {"name": "examples.hello", "args": {"a": 1}}}

ODD_METADATA = st.sampled_from(
    [
        {"uid": "not-a-uuid"},
        {"uid": "0" * 8 + "-0000-0000-0000-" + "0" * 11 + "\x00"},
        {"namespace": "a" * 64},
        {"generation": "2"},
        {"generation": -1},
        {"labels": {"a": "b\x00"}},
        {"annotations": {"k": 5}},
    ]
)
HOST_FILES_AS_ZONES = st.sampled_from(
    ["localtime", "posixrules", "Factory", "posix/Europe/Paris", "right/UTC", "Mars/Base"]
)


@asynccontextmanager
async def operator_context(dsn: str) -> AsyncIterator[tuple[context.Context, RecordingApi]]:
    pool = await store_pool.open_pool(dsn, min_size=1, max_size=2)
    api = RecordingApi()
    manual = clock.ManualClock(NOW)
    try:
        yield context.Context(pool, api, events.EventRecorder(api, manual), manual), api
    finally:
        await pool.close()


async def snapshot(ctx: context.Context) -> dict[str, list[Any]]:
    """Every stored row of the tables a reconcile writes, in a stable order."""
    rows: dict[str, list[Any]] = {}
    async with ctx.pool.connection() as conn:
        for table in TABLES:
            cursor = await conn.execute(
                f"SELECT to_jsonb(t)::text FROM {table} t ORDER BY 1"  # type: ignore[arg-type]
            )
            rows[table] = [row[0] for row in await cursor.fetchall()]
    return rows


def metadata(name: str, uid: str, generation: int) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": NAMESPACE,
        "uid": uid,
        "generation": generation,
        "creationTimestamp": "2026-12-01T08:00:00Z",
    }


def hostile_variants(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    """CRD-derived manifests; one in five with odd metadata, one in five (ScheduledJobs) with a
    host file as its time zone. (A residue of a wide integer picks the variant: Hypothesis
    does not draw ``one_of`` branches evenly.)"""
    generated = crd_admission.manifests(kind)
    odd_metadata = st.builds(
        lambda m, extra: {**m, "metadata": {**m["metadata"], **extra}}, generated, ODD_METADATA
    )
    host_zone = st.builds(
        lambda m, zone: {**m, "spec": {**GOOD_JOB, "timeZone": zone}},
        generated,
        HOST_FILES_AS_ZONES,
    )

    def variant(n: int) -> st.SearchStrategy[dict[str, Any]]:
        if n % 5 == 3:
            return odd_metadata
        if n % 5 == 4 and kind == "ScheduledJob":
            return host_zone
        return generated

    return st.integers(0, 100_000).flatmap(variant)


def with_identity(manifest: dict[str, Any], name: str, uid: str, generation: int) -> dict[str, Any]:
    """``manifest`` as the object ``name``/``uid``, keeping the metadata a variant made odd."""
    odd = {k: v for k, v in manifest["metadata"].items() if k != "name"}
    return {**manifest, "metadata": {**metadata(name, uid, generation), **odd}}


def warnings_of(api: RecordingApi) -> list[Any]:
    return [event for event in api.events if event.event_type == events.WARNING]


async def reconciled(coroutine: Any) -> None:
    """Run one reconcile: it must neither raise nor hang."""
    await asyncio.wait_for(coroutine, timeout=30)


# --- ScheduledJob ---------------------------------------------------------------------------


async def scheduled_job_edit(dsn: str, manifest: dict[str, Any]) -> None:
    async with operator_context(dsn) as (ctx, api):
        uid = str(uuid.uuid4())
        name = f"hostile-{uid[:8]}"  # examples share a database; each its own job name
        good = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "ScheduledJob",
            "metadata": metadata(name, uid, 1),
            "spec": GOOD_JOB,
        }
        await reconciled(scheduled_jobs.reconcile(ctx, good))
        stored = await schedules.get(ctx.pool, uuid.UUID(uid))
        assert stored is not None and stored.stalled_reason is None
        before = await snapshot(ctx)

        edit = with_identity(manifest, name, uid, 2)
        await reconciled(scheduled_jobs.reconcile(ctx, edit))
        await ctx.recorder.flush()
        spec, problem = scheduled_job.parse(edit)
        if spec is None:
            event(f"ScheduledJob edit refused: {problem[:60]}")
            assert problem is not None and NAMES_A_FIELD.match(problem), problem
            assert await snapshot(ctx) == before, "a rejected edit changed stored rows"
            [warning] = warnings_of(api)
            assert (warning.reason, warning.message) == ("InvalidSpec", problem)
            desired = status.scheduled_job_status(
                edit, spec_error=problem, schedule=None, window=None, missed=None, now=NOW
            )
            stalled = [c for c in desired["conditions"] if c["type"] == "Stalled"]
            assert stalled and stalled[0]["status"] == "True"
            assert stalled[0]["message"] == problem
            return
        after = await schedules.get(ctx.pool, uuid.UUID(uid))
        assert after is not None and after.active
        event(f"ScheduledJob edit stored: {after.stalled_reason or 'scheduled'}")
        if after.stalled_reason is None:
            assert after.next_fire_time is not None  # stored and scheduled
            assert warnings_of(api) == []
        else:
            [warning] = warnings_of(api)
            assert warning.reason == after.stalled_reason
            assert NAMES_A_FIELD.match(warning.message), warning.message


@SETTINGS
@given(manifest=hostile_variants("ScheduledJob"))
def test_a_hostile_scheduled_job_is_scheduled_or_stalled_and_never_crashes(
    store_dsn: str, manifest: dict[str, Any]
) -> None:
    asyncio.run(scheduled_job_edit(store_dsn, manifest))


# --- JobRun ---------------------------------------------------------------------------------


async def store_hello(ctx: context.Context, api: RecordingApi) -> None:
    """The ScheduledJob ``hello`` that generated ``jobRef``s may name."""
    uid = str(uuid.uuid4())
    async with ctx.pool.connection() as conn:  # the previous example's hello, deleted
        await conn.execute("UPDATE job_definitions SET active = false WHERE name = 'hello'")
    body = {
        "apiVersion": "sundial.dev/v1alpha1",
        "kind": "ScheduledJob",
        "metadata": metadata("hello", uid, 1),
        "spec": {**GOOD_JOB, "suspend": True},
    }
    api.put(kube.SCHEDULED_JOBS, body)
    await reconciled(scheduled_jobs.reconcile(ctx, body))


def condition(body: dict[str, Any], kind: str) -> dict[str, Any] | None:
    found = [c for c in (body.get("status") or {}).get("conditions") or [] if c["type"] == kind]
    return found[0] if found else None


async def job_run_edit(dsn: str, manifest: dict[str, Any]) -> None:
    async with operator_context(dsn) as (ctx, api):
        await store_hello(ctx, api)
        uid = str(uuid.uuid4())
        good = {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": "JobRun",
            "metadata": metadata("edited", uid, 1),
            "spec": {"jobRef": {"name": "hello"}, "args": {"b": 2}},
        }
        api.put(kube.JOB_RUNS, good)
        await reconciled(job_runs.reconcile(ctx, good))
        submitted = api.body(kube.JOB_RUNS, NAMESPACE, "edited")
        assert submitted["status"]["runId"]
        before = await snapshot(ctx)

        # A hostile edit of the submitted JobRun: refused edits leave every row as it was.
        edit = {**with_identity(manifest, "edited", uid, 2), "status": submitted["status"]}
        key = (kube.JOB_RUNS, edit["metadata"]["namespace"], "edited")
        api.put(kube.JOB_RUNS, edit)
        await reconciled(job_runs.reconcile(ctx, api.objects[key]))
        await ctx.recorder.flush()
        edited = api.objects.get(key)
        if edited is None:  # an accepted edit that cancelled it, with ttlSecondsAfterFinished
            assert edit["spec"].get("ttlSecondsAfterFinished") is not None
            return
        stalled = condition(edited, "Stalled")
        event(
            f"JobRun edit: {'refused' if stalled and stalled['status'] == 'True' else 'accepted'}"
        )
        if stalled is not None and stalled["status"] == "True":
            assert stalled["reason"] == conditions.ConditionReason.INVALID_SPEC
            assert NAMES_A_FIELD.match(stalled["message"]), stalled["message"]
            assert await snapshot(ctx) == before, "a rejected edit changed stored rows"
            assert [(w.reason, w.message) for w in warnings_of(api)] == [
                (stalled["reason"], stalled["message"])
            ]
        else:  # an accepted edit: the same run is followed
            assert edited["status"]["runId"] == submitted["status"]["runId"]
            assert not [w for w in warnings_of(api) if w.reason == "InvalidSpec"]
        api.events.clear()

        # The same manifest as a new JobRun: submitted, waiting for an upstream, or Stalled.
        fresh = with_identity(manifest, "hostile", str(uuid.uuid4()), 1)
        key = (kube.JOB_RUNS, fresh["metadata"]["namespace"], "hostile")
        api.put(kube.JOB_RUNS, fresh)
        await reconciled(job_runs.reconcile(ctx, api.objects[key]))
        await ctx.recorder.flush()
        after = api.objects.get(key)
        if after is None:  # cancelled and deleted at once by ttlSecondsAfterFinished: 0
            assert fresh["spec"].get("ttlSecondsAfterFinished") == 0
            return
        if (after.get("status") or {}).get("phase") == "Cancelled":
            assert fresh["spec"].get("cancel") is True  # cancelled before it was submitted
            return
        stalled = condition(after, "Stalled")
        reconciling = condition(after, "Reconciling")
        if (after.get("status") or {}).get("runId"):
            event("new JobRun submitted")
            return
        if stalled is not None and stalled["status"] == "True":
            event(f"new JobRun stalled: {stalled['reason']} {stalled['message'][:50]}")
            assert NAMES_A_FIELD.match(stalled["message"]), stalled["message"]
            assert (stalled["reason"], stalled["message"]) in [
                (w.reason, w.message) for w in warnings_of(api)
            ]
            return
        assert reconciling is not None, after
        event("new JobRun waiting for an upstream")
        assert reconciling["reason"] == conditions.ConditionReason.WAITING_FOR_UPSTREAM
        assert reconciling["message"].startswith("spec.dependsOn: JobRun ")


@SETTINGS
@given(manifest=hostile_variants("JobRun"))
def test_a_hostile_job_run_is_submitted_or_stalled_and_never_crashes(
    store_dsn: str, manifest: dict[str, Any]
) -> None:
    asyncio.run(job_run_edit(store_dsn, copy.deepcopy(manifest)))

"""The run lifecycle against a simple model, driven by hypothesis through random operations.

Each example uses its own queue on a shared database, so examples do not see each other's
runs. Time is the one thing faked: "the lease runs out" moves ``lease_until`` into the past
instead of sleeping, and backoff is zero so a retry is due as soon as it is promoted.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from sundial.attempt import finishes
from sundial.store import claims, reaper, runs
from sundial.store import pool as store_pool
from support.store import create_job

T = TypeVar("T")
MAX_RETRIES = 2
MAX_LOST_LEASES = 3  # job_runs.max_lost_leases' default (migration 0081, ADR 0016)
REPLAYABLE = ("dead_lettered", "timed_out")


@dataclass
class ModelRun:
    state: str = "pending"
    attempt: int = 0
    retries_used: int = 0
    lease_expiries: int = 0
    cancel_requested: bool = False


class RunLifecycle(RuleBasedStateMachine):
    dsn: str = ""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.pool: store_pool.Pool = self.run(store_pool.open_pool(self.dsn, max_size=2))
        self.queue = f"q{uuid.uuid4().hex[:10]}"
        self.job = create_job(
            self.dsn,
            f"job-{self.queue}",
            queue=self.queue,
            max_retries=MAX_RETRIES,
            backoff_base_seconds=0.0,
            backoff_cap_seconds=0.0,
        )
        self.model: dict[int, ModelRun] = {}
        self.held: dict[int, claims.ClaimedRun] = {}  # what our one worker believes it holds
        self.stale: list[claims.ClaimedRun] = []  # claims whose lease we let run out

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def teardown(self) -> None:
        self.run(self.pool.close())
        self.loop.close()

    @initialize()
    def start(self) -> None:
        pass

    @rule(priority=st.integers(min_value=0, max_value=9))
    def submit(self, priority: int) -> None:
        submitted = self.run(runs.submit(self.pool, self.job, priority=priority))
        self.model[submitted.run_id] = ModelRun()

    @rule(limit=st.integers(min_value=1, max_value=3))
    def claim(self, limit: int) -> None:
        got = self.run(claims.claim(self.pool, "w", queues=[self.queue], limit=limit))
        pending = [i for i, m in self.model.items() if m.state == "pending"]
        assert len(got) == min(limit, len(pending))
        for run in got:
            model = self.model[run.id]
            assert model.state == "pending"
            model.state = "running"
            model.attempt += 1
            assert run.attempt == model.attempt
            self.held[run.id] = run

    @precondition(lambda self: self.held)
    @rule(data=st.data(), how=st.sampled_from(["succeed", "fail", "timeout", "cancel"]))
    def finish(self, data: st.DataObject, how: str) -> None:
        run_id = data.draw(st.sampled_from(sorted(self.held)))
        run = self.held.pop(run_id)
        outcome = {
            "succeed": lambda: finishes.succeeded(run),
            "fail": lambda: finishes.failed(run, "boom"),
            "timeout": lambda: finishes.timed_out(run),
            "cancel": lambda: finishes.cancelled(run),
        }[how]()
        result = self.run(claims.finish(self.pool, "w", [outcome]))
        model = self.model[run_id]
        if how == "succeed":
            model.state = "completed"
        elif how == "cancel":
            model.state = "cancelled"
        elif model.retries_used >= MAX_RETRIES:
            model.state = "timed_out" if how == "timeout" else "dead_lettered"
        else:
            model.state = "retry_wait"
            model.retries_used += 1
        assert result.states == {run_id: model.state} and not result.lost

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def lease_runs_out(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(sorted(self.held)))
        self.stale.append(self.held.pop(run_id))
        with psycopg.connect(self.dsn) as conn:
            conn.execute(
                "UPDATE job_runs SET lease_until = now() - interval '1 second' WHERE id = %s",
                (run_id,),
            )

    @rule()
    def reap(self) -> None:
        result = self.run(reaper.reap(self.pool))
        expired = {
            run.id
            for run in self.stale
            if self.model[run.id].state == "running" and self.model[run.id].attempt == run.attempt
        }
        mine = (set(result.requeued) | set(result.ended)) & set(self.model)
        assert mine == expired
        for run_id in expired:
            # A lost lease spends the lost-lease budget, never maxRetries (ADR 0016).
            model = self.model[run_id]
            if model.cancel_requested:
                model.state = "cancelled"
            elif model.lease_expiries >= MAX_LOST_LEASES:
                model.state = "dead_lettered"
            else:
                model.state = "pending"
            model.lease_expiries += 1

    @precondition(lambda self: self.stale)
    @rule(data=st.data())
    def zombie_writes(self, data: st.DataObject) -> None:
        run = data.draw(st.sampled_from(self.stale))
        if self.model[run.id].state == "running" and self.model[run.id].attempt == run.attempt:
            return  # not a zombie yet: the reaper has not taken the run back
        beat = self.run(claims.heartbeat(self.pool, "w", [(run.id, run.attempt)]))
        done = self.run(claims.finish(self.pool, "w", [finishes.succeeded(run)]))
        assert beat.lost == {run.id} and done.lost == {run.id}

    @rule()
    def promote(self) -> None:
        self.run(reaper.promote_due(self.pool))
        for model in self.model.values():
            if model.state == "retry_wait":
                model.state = "pending"

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        run_id = data.draw(st.sampled_from(sorted(self.model)))
        result = self.run(runs.cancel(self.pool, run_id))
        model = self.model[run_id]
        if model.state in ("pending", "retry_wait"):
            assert result == runs.CancelResult.CANCELLED
            model.state = "cancelled"
        elif model.state == "running":
            assert result == runs.CancelResult.REQUESTED
            model.cancel_requested = True
        else:
            assert result == runs.CancelResult.ALREADY_FINISHED

    @precondition(lambda self: any(m.state in REPLAYABLE for m in self.model.values()))
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        dead = sorted(i for i, m in self.model.items() if m.state in REPLAYABLE)
        run_id = data.draw(st.sampled_from(dead))
        assert self.run(runs.replay(self.pool, run_id)) == self.model[run_id].attempt
        self.model[run_id] = ModelRun(attempt=self.model[run_id].attempt)

    @invariant()
    def database_matches_model(self) -> None:
        with psycopg.connect(self.dsn) as conn:
            rows = conn.execute(
                "SELECT id, state, attempt, retries_used FROM job_runs WHERE queue = %s",
                (self.queue,),
            ).fetchall()
        actual = {row[0]: (row[1], row[2], row[3]) for row in rows}
        expected = {i: (m.state, m.attempt, m.retries_used) for i, m in self.model.items()}
        assert actual == expected


def test_run_lifecycle_matches_the_model(store_dsn: str) -> None:
    RunLifecycle.dsn = store_dsn
    run_state_machine_as_test(
        RunLifecycle,
        settings=settings(
            max_examples=20,
            stateful_step_count=20,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

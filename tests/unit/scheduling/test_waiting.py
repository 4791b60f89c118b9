"""Why a run waits: one reason and one sentence per case, the same for the CLI and the JobRun."""

from __future__ import annotations

import datetime

import pytest

from sundial.api import conditions
from sundial.scheduling import waiting
from sundial.scheduling.run_state import RunState

LATER = datetime.datetime(2026, 12, 1, 12, 30, 5, tzinfo=datetime.UTC)


def why(state: str, **facts: object) -> waiting.Waiting | None:
    return waiting.why(waiting.WaitFacts(run_id=7, state=state, **facts))  # type: ignore[arg-type]


def test_running_and_finished_runs_do_not_wait():
    for state in RunState:
        if state not in waiting.WAITING_STATES:
            assert why(state, run_at=LATER, unclaimable_reason="x") is None, state


def test_every_waiting_state_gets_a_reason():
    for state in waiting.WAITING_STATES:
        found = why(state, run_at=LATER)
        assert found is not None and found.message, state


def test_an_unclaimable_run_says_what_no_runner_serves():
    found = why("pending", queue="etl", unclaimable_reason="no live runner serves queue 'etl'")
    assert found == waiting.Waiting(
        waiting.WaitReason.UNCLAIMABLE, "no live runner serves queue 'etl'"
    )


def test_a_claimable_pending_run_waits_for_a_slot_of_its_queue():
    found = why("pending", queue="etl")
    assert found is not None and found.reason is waiting.WaitReason.WAITING_FOR_RUNNER
    assert "queue 'etl'" in found.message


def test_a_blocked_run_names_its_unfinished_upstream_runs():
    upstream = tuple(
        waiting.Upstream(run_id, f"default/step-{run_id}", "running") for run_id in (3, 4, 5)
    )
    found = why("blocked", pending_dependencies=5, upstream=upstream)
    assert found is not None and found.reason is waiting.WaitReason.WAITING_FOR_UPSTREAM
    assert found.message == (
        "waits for 5 upstream runs to complete: run 3 (default/step-3, running),"
        " run 4 (default/step-4, running), run 5 (default/step-5, running) and 2 more"
    )


def test_a_retry_deferred_by_the_retry_budget_says_which_dependency_and_until_when():
    note = waiting.retry_budget_note(42.4, "payments-api", 100, 60.0)
    found = why("retry_wait", run_at=LATER, attempt=2, last_error=f"boom\n{note}")
    assert found is not None and found.reason is waiting.WaitReason.RETRY_BUDGET_SPENT
    assert found.message == (
        "retry deferred until 2026-12-01T12:30:05Z: the retry budget of dependency"
        " 'payments-api' (100 retries per 60s in this runner) is spent"
    )


def test_a_run_handed_back_by_an_open_circuit_says_so():
    found = why("retry_wait", run_at=LATER, last_error=waiting.circuit_open_note("flaky-api"))
    assert found is not None and found.reason is waiting.WaitReason.CIRCUIT_OPEN
    assert "'flaky-api'" in found.message and "2026-12-01T12:30:05Z" in found.message


def test_a_backoff_says_which_attempt_failed_and_when_it_retries():
    found = why("retry_wait", run_at=LATER, attempt=3, failure_reason="oom", last_error="x")
    assert found == waiting.Waiting(
        waiting.WaitReason.RETRY_BACKOFF,
        "attempt 3 failed (oom); it retries after its backoff, at 2026-12-01T12:30:05Z",
    )


def test_a_scheduled_run_names_its_run_at():
    found = why("scheduled", run_at=LATER)
    assert found is not None and found.reason is waiting.WaitReason.RUN_AT_IN_FUTURE
    assert "2026-12-01T12:30:05Z" in found.message


@pytest.mark.parametrize("state", ["scheduled", "retry_wait"])
def test_a_due_run_held_by_its_concurrency_key_names_the_key(state: str):
    found = why(state, run_at=LATER, held_by_key="warehouse")
    assert found is not None and found.reason is waiting.WaitReason.CONCURRENCY_LIMIT
    assert "concurrency key 'warehouse'" in found.message


def test_a_promoted_keyed_run_waits_for_a_runner_like_any_other():
    found = why("pending", queue="etl", held_by_key="warehouse")
    assert found is not None and found.reason is waiting.WaitReason.WAITING_FOR_RUNNER


@pytest.mark.parametrize("reason", list(waiting.WaitReason))
def test_every_wait_reason_is_a_condition_reason(reason: waiting.WaitReason):
    assert conditions.ConditionReason(reason.value).value == reason.value


def test_the_words_depend_on_the_facts_only():
    # No clock: the operator writes a JobRun's status only when the reason changes.
    first = why("retry_wait", run_at=LATER, attempt=1)
    assert first == why("retry_wait", run_at=LATER, attempt=1)

"""The desired status of ScheduledJobs and JobRuns, computed without I/O."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

import pytest

from sundial.operator import status
from sundial.scheduling import run_state
from sundial.store import circuits, history

NOW = datetime.datetime(2026, 11, 29, 12, 0, 30, 123456, tzinfo=datetime.UTC)


def schedule(**overrides: object) -> history.ScheduleView:
    values: dict[str, object] = {
        "id": uuid.uuid4(),
        "generation": 2,
        "next_fire_time": datetime.datetime(2026, 11, 29, 12, 1, tzinfo=datetime.UTC),
        "spread_offset_ms": 1500,
        "suspended": False,
        "quarantined": False,
        "quarantine_message": None,
        "consecutive_failures": 0,
        "quarantine_after": None,
        "stalled_reason": None,
        "last_error": None,
        "active": True,
        "last_fire_time": datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC),
    }
    values.update(overrides)
    return history.ScheduleView(**values)  # type: ignore[arg-type]


def run(run_id: int, state: str, *, finished_minute: int | None = None) -> history.RunView:
    started = datetime.datetime(2026, 11, 29, 11, 0, tzinfo=datetime.UTC)
    finished = None if finished_minute is None else started.replace(minute=finished_minute)
    return history.RunView(run_id, state, 1, None, None, started, started, finished)


def body(generation: int = 2, conditions: list[dict[str, object]] | None = None) -> dict:
    return {
        "metadata": {
            "name": "hello",
            "namespace": "ns",
            "uid": str(uuid.uuid4()),
            "generation": generation,
        },
        "status": {"conditions": conditions} if conditions else {},
    }


def by_type(result: dict) -> dict[str, dict]:
    return {condition["type"]: condition for condition in result["conditions"]}


def test_a_stored_schedule_is_ready_with_its_next_fire_after_spread():
    window = history.Window([run(7, "running")], [run(5, "completed", finished_minute=3)], [])
    result = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=window, missed=None, now=NOW
    )
    conditions = by_type(result)
    assert conditions["Ready"]["status"] == "True"
    assert conditions["Stalled"]["status"] == "False"
    assert conditions["Ready"]["observedGeneration"] == 2
    assert conditions["Ready"]["lastTransitionTime"] == "2026-11-29T12:00:30Z"
    assert result["nextScheduleTime"] == "2026-11-29T12:01:01Z"
    assert result["lastScheduleTime"] == "2026-11-29T12:00:00Z"
    assert result["lastSuccessfulTime"] == "2026-11-29T11:03:00Z"
    assert result["activeCount"] == 1
    assert result["active"] == [{"name": "hello-7", "namespace": "ns", "runId": "7"}]


def test_a_stalled_schedule_names_its_reason_and_has_no_next_fire():
    stalled = schedule(stalled_reason="UnknownTimeZone", last_error="timeZone: Mars/Base unknown")
    result = status.scheduled_job_status(
        body(), spec_error=None, schedule=stalled, window=None, missed=None, now=NOW
    )
    conditions = by_type(result)
    assert conditions["Stalled"]["status"] == "True"
    assert conditions["Stalled"]["reason"] == "UnknownTimeZone"
    assert conditions["Ready"]["status"] == "False"
    assert result["nextScheduleTime"] is None


def test_an_invalid_spec_is_stalled_with_the_message():
    result = status.scheduled_job_status(
        body(),
        spec_error="spec.handler.args: too big",
        schedule=None,
        window=None,
        missed=None,
        now=NOW,
    )
    stalled = by_type(result)["Stalled"]
    assert (stalled["status"], stalled["reason"]) == ("True", "InvalidSpec")
    assert "spec.handler.args" in stalled["message"]


def test_last_transition_time_is_kept_while_the_status_stays():
    first = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=None, missed=None, now=NOW
    )
    later = NOW + datetime.timedelta(hours=1)
    second = status.scheduled_job_status(
        body(conditions=first["conditions"]),
        spec_error=None,
        schedule=schedule(suspended=True),
        window=None,
        missed=None,
        now=later,
    )
    assert by_type(second)["Ready"]["lastTransitionTime"] == "2026-11-29T12:00:30Z"
    assert by_type(second)["Suspended"]["lastTransitionTime"] == "2026-11-29T13:00:30Z"
    assert second["nextScheduleTime"] is None


def test_an_unchanged_status_needs_no_write():
    first = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=None, missed=None, now=NOW
    )
    current = {key: value for key, value in first.items() if value is not None}
    again = status.scheduled_job_status(
        {**body(), "status": current},
        spec_error=None,
        schedule=schedule(),
        window=None,
        missed=None,
        now=NOW + datetime.timedelta(minutes=5),
    )
    assert status.changes(current, again) == {}


def test_a_finished_run_maps_to_phase_duration_and_removes_stale_fields():
    finished = history.RunView(
        9,
        "dead_lettered",
        4,
        "error",
        "boom",
        None,
        datetime.datetime(2026, 11, 29, 11, 0, tzinfo=datetime.UTC),
        datetime.datetime(2026, 11, 29, 11, 1, 23, tzinfo=datetime.UTC),
    )
    desired = status.job_run_status(finished, generation=1)
    assert desired["phase"] == "DeadLettered"
    assert desired["duration"] == "1m23s"
    patch = status.changes({"phase": "Running", "fireTime": "2026-11-29T11:00:00Z"}, desired)
    assert patch["phase"] == "DeadLettered"
    assert patch["fireTime"] is None
    assert patch["lastError"] == "boom"


def test_a_pod_run_shows_its_pod_exit_code_and_the_pods_reason():
    dead = history.RunView(
        11,
        "dead_lettered",
        3,
        "oom",
        "OOMKilled, exit code 137",
        None,
        datetime.datetime(2026, 11, 29, 11, 0, tzinfo=datetime.UTC),
        datetime.datetime(2026, 11, 29, 11, 0, 30, tzinfo=datetime.UTC),
        pod_name="report-0123456789-3",
        pod_exit_code=137,
        pod_reason="OOMKilled",
    )
    desired = status.job_run_status(dead, generation=1)
    assert (desired["podName"], desired["exitCode"], desired["reason"]) == (
        "report-0123456789-3",
        137,
        "OOMKilled",
    )
    # Only differences are written: the same run again patches nothing.
    assert status.changes({**desired}, status.job_run_status(dead, generation=1)) == {}


def test_a_retry_clears_the_previous_exit_code_but_a_run_without_pod_columns_keeps_them():
    retrying = history.RunView(
        12, "running", 2, "oom", None, None, None, None, pod_name="report-x-2"
    )
    before = {"podName": "report-x-1", "exitCode": 137, "reason": "OOMKilled"}
    patch = status.changes(before, status.job_run_status(retrying, generation=1))
    assert (patch["podName"], patch["exitCode"], patch["reason"]) == ("report-x-2", None, "oom")

    archived = history.RunView(12, "completed", 2, None, None, None, None, None)
    patch = status.changes(
        {"podName": "report-x-2", "exitCode": 0}, status.job_run_status(archived, generation=1)
    )
    assert "podName" not in patch and "exitCode" not in patch


def test_a_succeeded_pod_run_keeps_an_empty_reason():
    done = history.RunView(
        13, "completed", 1, None, None, None, None, None, "report-y-1", 0, "Completed"
    )
    desired = status.job_run_status(done, generation=1)
    assert (desired["podName"], desired["exitCode"], desired["reason"]) == ("report-y-1", 0, None)


def test_active_count_is_the_stores_count_not_the_listed_runs():
    listed = [run(run_id, "running") for run_id in range(100, 0, -1)]
    window = history.Window(listed, [], [], active_count=250)
    result = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=window, missed=None, now=NOW
    )
    assert result["activeCount"] == 250
    assert len(result["active"]) == 100


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("suspended after 3 consecutive failed runs", "ConsecutiveFailures"),
        ("failurePolicy Quarantine: exit code 42", "QuarantineRule"),
    ],
    ids=["consecutive failures", "a failure policy rule"],
)
def test_a_quarantined_schedule_is_stalled_and_says_why(message: str, reason: str) -> None:
    quarantined = schedule(quarantined=True, quarantine_message=message)
    result = status.scheduled_job_status(
        body(), spec_error=None, schedule=quarantined, window=None, missed=None, now=NOW
    )
    conditions = by_type(result)
    for condition_type in ("Stalled", "Quarantined", "Suspended"):
        assert conditions[condition_type]["status"] == "True"
        assert conditions[condition_type]["reason"] == reason
    assert conditions["Stalled"]["message"] == message
    assert conditions["Ready"]["status"] == "False"
    assert result["nextScheduleTime"] is None


def _job_run_conditions(state: str) -> dict[str, tuple[str, str]]:
    wanted = status.job_run_conditions(run(9, state, finished_minute=5))
    return {condition_type: (state_, reason) for condition_type, state_, reason, _ in wanted}


def test_job_run_conditions_follow_the_run_like_a_jobs():
    waits = {
        "scheduled": "RunAtInFuture",
        "pending": "WaitingForRunner",
        "blocked": "WaitingForUpstream",
        "running": "RunNotFinished",
        "retry_wait": "RetryBackoff",
    }
    for state, reconciling in waits.items():
        assert _job_run_conditions(state) == {
            "Complete": ("False", "RunNotFinished"),
            "Failed": ("False", "RunNotFinished"),
            "Reconciling": ("True", reconciling),
            "Stalled": ("False", "AsExpected"),
        }, state
    assert _job_run_conditions("completed") == {
        "Complete": ("True", "Succeeded"),
        "Failed": ("False", "AsExpected"),
        "Reconciling": ("False", "AsExpected"),
        "Stalled": ("False", "AsExpected"),
    }
    for state, reason in (
        ("failed", "Failed"),
        ("timed_out", "TimedOut"),
        ("dead_lettered", "DeadLettered"),
    ):
        assert _job_run_conditions(state) == {
            "Complete": ("False", reason),
            "Failed": ("True", reason),
            "Reconciling": ("False", "AsExpected"),
            "Stalled": ("True", reason),
        }, state
    assert _job_run_conditions("cancelled") == {
        "Complete": ("False", "Cancelled"),
        "Failed": ("True", "Cancelled"),
        "Reconciling": ("False", "AsExpected"),
        "Stalled": ("False", "AsExpected"),
    }


def test_a_failed_job_runs_conditions_carry_its_last_error():
    failed = history.RunView(9, "failed", 3, "HandlerError", "ValueError: bad row", NOW, NOW, NOW)
    messages = {kind: message for kind, _, _, message in status.job_run_conditions(failed)}
    assert messages["Failed"] == messages["Stalled"] == "ValueError: bad row"


def test_every_run_state_has_a_phase() -> None:
    assert set(status.PHASES) == set(run_state.RunState)


def test_the_reason_is_the_failures_detail_when_the_runner_gave_one() -> None:
    bad_args = history.RunView(
        14, "failed", 1, "permanent", "invalid args", None, None, None, failure_detail="BadArgs"
    )
    assert status.job_run_status(bad_args, generation=1)["reason"] == "BadArgs"
    no_detail = history.RunView(15, "failed", 1, "permanent", "upstream failed", *[None] * 3)
    assert status.job_run_status(no_detail, generation=1)["reason"] == "permanent"
    # A pod run's failure written before the launcher kept its Pod's reason as the detail.
    pod = history.RunView(
        16, "dead_lettered", 3, "oom", None, None, None, None, "p", 137, "OOMKilled"
    )
    assert status.job_run_status(pod, generation=1)["reason"] == "OOMKilled"


def test_a_pod_runs_reason_is_one_word_through_its_retries() -> None:
    """The launcher keeps the Pod's reason as the failure's detail: the retry's Pod, which
    clears the run's Pod columns, does not turn ``OOMKilled`` into the class ``oom``, and a
    timeout reads ``Timeout`` before and after, as a runner's does."""

    def reason(state: str, attempt: int, cls: str, detail: str, pod_reason: str | None) -> str:
        run = history.RunView(
            17, state, attempt, cls, "x", None, None, None, f"p-{attempt}", None, pod_reason
        )
        run = dataclasses.replace(run, failure_detail=detail)
        return status.job_run_status(run, generation=1)["reason"]

    for cls, detail, pod_reason in (
        ("oom", "OOMKilled", "OOMKilled"),
        ("timeout", "Timeout", "DeadlineExceeded"),
    ):
        failed_attempt = reason("pending", 1, cls, detail, pod_reason)
        retry_running = reason("running", 2, cls, detail, None)
        ended = reason("dead_lettered", 2, cls, detail, pod_reason)
        assert failed_attempt == retry_running == ended == detail


def test_a_pending_run_no_runner_can_claim_says_why():
    waiting = history.RunView(
        14,
        "pending",
        0,
        None,
        None,
        None,
        None,
        None,
        unclaimable_reason="no runner serves handler h with executionModel async: ...",
    )
    desired = status.job_run_status(waiting, generation=1)
    assert (desired["phase"], desired["reason"]) == ("Pending", "Unclaimable")
    assert desired["lastError"].startswith("no runner serves handler h")

    # Once claimed, the claim cleared the reason: the status drops it.
    running = history.RunView(14, "running", 1, None, None, None, None, None)
    patch = status.changes(desired, status.job_run_status(running, generation=1))
    assert patch["reason"] is None and patch["lastError"] is None


def test_a_reason_on_a_run_that_is_no_longer_pending_is_not_shown():
    # A stale reason on a running run (a claim by a runner of an older version) is not shown.
    running = history.RunView(
        15, "running", 1, None, None, None, None, None, unclaimable_reason="stale"
    )
    desired = status.job_run_status(running, generation=1)
    assert desired["reason"] is None and desired["lastError"] is None


def test_a_waiting_job_run_says_why_and_is_written_only_when_the_reason_changes():
    started = datetime.datetime(2026, 11, 29, 11, 0, tzinfo=datetime.UTC)
    blocked = history.RunView(
        12, "blocked", 0, None, None, None, None, None,
        queue="default", pending_dependencies=1, upstream=[[11, "default/extract", "running"]],
    )  # fmt: skip
    desired = status.job_run_status(blocked, generation=1)
    assert desired["waiting"] == (
        "waits for 1 upstream run to complete: run 11 (default/extract, running)"
    )
    [reconciling] = [c for c in status.job_run_conditions(blocked) if c[0] == "Reconciling"]
    assert reconciling[1:3] == ("True", "WaitingForUpstream")
    assert "run 11 (default/extract, running)" in reconciling[3]
    # The same facts later: nothing to write.
    assert status.changes(desired, status.job_run_status(blocked, generation=1)) == {}

    running = history.RunView(12, "running", 1, None, None, None, started, None)
    assert status.changes(desired, status.job_run_status(running, generation=1))["waiting"] is None


def open_circuit(opened: int = 1, half_open: int = 0, runners: int = 2) -> circuits.OpenCircuit:
    return circuits.OpenCircuit("payments-api", opened, half_open, runners, NOW, ("r1",))


def test_an_open_circuit_degrades_the_job_and_a_closed_one_clears_it():
    degraded = status.scheduled_job_status(
        body(),
        spec_error=None,
        schedule=schedule(),
        window=None,
        missed=None,
        now=NOW,
        circuit=open_circuit(),
    )
    condition = by_type(degraded)["Degraded"]
    assert (condition["status"], condition["reason"]) == ("True", "CircuitOpen")
    assert condition["message"].startswith(
        "the circuit breaker of dependency 'payments-api' is open on 1 of 2 live runners:"
    )
    assert by_type(degraded)["Ready"]["status"] == "True"  # it still fires; its runs wait

    current = {key: value for key, value in degraded.items() if value is not None}
    still = status.scheduled_job_status(
        {**body(), "status": current},
        spec_error=None,
        schedule=schedule(),
        window=None,
        missed=None,
        now=NOW + datetime.timedelta(minutes=1),
        # a runner went half-open: still open on 1 of 2, so the same message, no write
        circuit=open_circuit(opened=0, half_open=1),
    )
    assert status.changes(current, still) == {}

    cleared = status.scheduled_job_status(
        {**body(), "status": current},
        spec_error=None,
        schedule=schedule(),
        window=None,
        missed=None,
        now=NOW + datetime.timedelta(minutes=2),
        circuit=None,
    )
    condition = by_type(cleared)["Degraded"]
    assert (condition["status"], condition["reason"]) == ("False", "AsExpected")
    assert condition["lastTransitionTime"] == "2026-11-29T12:02:30Z"


def test_the_message_says_how_many_runners_see_the_circuit_open():
    message = status.circuit_open_message(open_circuit(opened=2, half_open=1, runners=4))
    assert "'payments-api' is open on 3 of 4 live runners" in message
    assert "open on 1 of 1 live runner:" in status.circuit_open_message(open_circuit(runners=1))


def _both_paths(
    monkeypatch: pytest.MonkeyPatch, current: dict, wanted: list, generation: int | None
) -> tuple[list, list]:
    """conditions_with as it runs, and with its shortcut for unchanged conditions turned off."""
    later = NOW + datetime.timedelta(minutes=5)
    taken = status.conditions_with(current, wanted, now=later, generation=generation)
    with monkeypatch.context() as patched:
        patched.setattr(status, "_unchanged", lambda *_: None)
        full = status.conditions_with(current, wanted, now=later, generation=generation)
    return taken, full


@pytest.mark.parametrize("generation", [1, 2, None])
@pytest.mark.parametrize(
    "edit",
    [
        lambda conditions: None,  # as the operator wrote them: the shortcut is taken
        lambda conditions: conditions[0].update(message="someone else's words"),
        lambda conditions: conditions[0].update(status="Unknown"),
        lambda conditions: conditions[0].update(lastTransitionTime="2026-11-29T12:00:30.5Z"),
        lambda conditions: conditions[0].update(lastTransitionTime="2026-11-29T12:00:30+00:00"),
        lambda conditions: conditions[0].update(lastTransitionTime="2026-13-29T12:00:30Z"),
        lambda conditions: conditions[0].update(observedGeneration=1),
        lambda conditions: conditions[0].update(observedGeneration=True),
        lambda conditions: conditions[0].pop("observedGeneration", None),
        lambda conditions: conditions[0].update(extra="field"),
        lambda conditions: conditions.append(dict(conditions[0], type="SomeoneElses")),
        lambda conditions: conditions.pop(),
        lambda conditions: conditions.append(dict(conditions[0])),
    ],
)
def test_unchanged_conditions_are_returned_as_the_full_path_would_rebuild_them(
    monkeypatch: pytest.MonkeyPatch, edit, generation
) -> None:
    first = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=None, missed=None, now=NOW
    )
    wanted = [
        (condition["type"], condition["status"], condition["reason"], condition["message"])
        for condition in first["conditions"]
    ]
    written = status.conditions_with(None, wanted, now=NOW, generation=generation)
    edit(written)
    taken, full = _both_paths(monkeypatch, {"conditions": written}, wanted, generation)
    assert taken == full


def test_the_shortcut_is_taken_for_conditions_the_operator_wrote(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = status.scheduled_job_status(
        body(), spec_error=None, schedule=schedule(), window=None, missed=None, now=NOW
    )
    wanted = [
        (condition["type"], condition["status"], condition["reason"], condition["message"])
        for condition in first["conditions"]
    ]
    assert status._unchanged({"conditions": first["conditions"]}, wanted, 2) == first["conditions"]

"""The runner's held attempts and their counts per namespace (``in_flight.Held``): the counts a
claim's fair share reads are always the held attempts counted by namespace, whatever order runs
are claimed, claimed again under a new attempt, finished, lost or released in."""

from __future__ import annotations

import collections
import random
import uuid
from datetime import UTC, datetime

from sundial.runner import in_flight, registry
from sundial.store import claims
from support.invocations import invoke

NOW = datetime(2026, 6, 1, 10, 0, tzinfo=UTC)


def attempt(run_id: int, namespace: str | None, number: int = 1) -> in_flight.Attempt:
    run = claims.ClaimedRun(
        id=run_id, attempt=number, job_id=uuid.uuid4(), queue="default", handler="jobs.sync",
        execution_model=None, args={}, timeout_seconds=None, schedule_id=None, fire_time=None,
        idempotency_key=f"run:{run_id}", lease_until=NOW, priority=1, run_at=NOW,
        max_retries=3, retries_used=0, backoff_base_seconds=1.0, backoff_cap_seconds=1.0,
        cancel_requested=False, namespace=namespace,
    )  # fmt: skip
    return in_flight.Attempt(run, invoke("jobs.sync"), registry.ExecutionModel.ASYNC, 0.0)


def counted(held: in_flight.Held) -> collections.Counter[str]:
    return collections.Counter(a.run.namespace for a in held.values() if a.run.namespace)


def test_claims_and_finishes_are_counted_per_namespace() -> None:
    held = in_flight.Held()
    first, second, third = attempt(1, "team-a"), attempt(2, "team-a"), attempt(3, "team-b")
    for each in (first, second, third):
        held.add(each)
    assert held.by_namespace == {"team-a": 2, "team-b": 1}
    assert len(held) == 3 and held[2] is second

    held.drop(first)
    held.drop(third)
    assert held.by_namespace == {"team-a": 1}
    assert "team-b" not in held.by_namespace  # no zero entries: a claim sends what is held


def test_a_run_claimed_again_under_a_new_attempt_counts_once() -> None:
    held = in_flight.Held()
    held.add(attempt(1, "team-a", number=1))
    newer = attempt(1, "team-a", number=2)
    held.add(newer)
    assert held.by_namespace == {"team-a": 1}
    assert held[1] is newer


def test_dropping_twice_or_dropping_what_is_not_held_changes_nothing() -> None:
    held = in_flight.Held()
    kept, finished = attempt(1, "team-a"), attempt(2, "team-a")
    held.add(kept)
    held.add(finished)
    held.drop(finished)
    held.drop(finished)  # lost and then settled: both forget it
    held.drop(attempt(9, "team-a"))
    assert held.by_namespace == {"team-a": 1}
    assert list(held) == [1]


def test_runs_without_a_namespace_are_held_but_not_counted() -> None:
    held = in_flight.Held()
    old = attempt(1, None)  # inserted by a process older than the namespace column
    held.add(old)
    held.add(attempt(2, "team-a"))
    assert len(held) == 2
    assert held.by_namespace == {"team-a": 1}
    held.drop(old)
    assert held.by_namespace == {"team-a": 1}


def test_the_counts_equal_the_held_attempts_after_any_sequence() -> None:
    rng = random.Random(20261206)
    namespaces = ["team-a", "team-b", "team-c", None]
    held = in_flight.Held()
    known: dict[int, in_flight.Attempt] = {}
    for _ in range(5000):
        run_id = rng.randrange(60)
        if rng.random() < 0.55:
            previous = known.get(run_id)
            namespace = previous.run.namespace if previous else rng.choice(namespaces)
            number = previous.run.attempt + 1 if previous else 1
            known[run_id] = attempt(run_id, namespace, number)
            held.add(known[run_id])
        elif run_id in known:
            held.drop(known[run_id])
        assert held.by_namespace == counted(held)
        assert all(count > 0 for count in held.by_namespace.values())
    assert len(held) > 0  # the sequence ended with attempts held, so the counts were exercised

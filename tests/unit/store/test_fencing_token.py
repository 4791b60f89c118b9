"""``ClaimedRun.fencing_token``: the number a handler guards its side effects with grows with
every claim of a run, across hot-queue epochs too, where the attempt number alone can repeat."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sundial.store import claims

NOW = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)


def claimed(attempt: int, epoch: int = 0) -> claims.ClaimedRun:
    return claims.ClaimedRun(
        id=1, attempt=attempt, job_id=uuid.uuid4(), queue="default", handler="jobs.sync",
        execution_model=None, args={}, timeout_seconds=None, schedule_id=None, fire_time=None,
        idempotency_key="run:1", lease_until=NOW, priority=1, run_at=NOW, max_retries=3,
        retries_used=0, backoff_base_seconds=1.0, backoff_cap_seconds=1.0,
        cancel_requested=False, epoch=epoch,
    )  # fmt: skip


def test_without_a_hot_queue_the_token_is_the_attempt() -> None:
    assert [claimed(n).fencing_token for n in (1, 2, 3)] == [1, 2, 3]


def test_a_later_epoch_outranks_any_attempt_of_an_earlier_one() -> None:
    # Redis came back empty: the reconciler gives the run back and it is attempt 1 again.
    old, again = claimed(40_000, epoch=3), claimed(1, epoch=4)
    assert again.attempt < old.attempt
    assert again.fencing_token > old.fencing_token
    # Within an epoch the attempt decides; back on PostgreSQL alone the row keeps its epoch.
    assert claimed(2, epoch=4).fencing_token > again.fencing_token
    assert claimed(2, epoch=4).fencing_token == (4 << 32) | 2

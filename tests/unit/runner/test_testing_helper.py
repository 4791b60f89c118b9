from __future__ import annotations

from datetime import UTC, datetime

import pydantic
import pytest

from sundial import testing


def test_call_runs_a_sync_handler_with_validated_args() -> None:
    assert testing.call("sample.report", {"day": "2021-03-04", "pages": "7"}) == "2021-03-04:7"
    with pytest.raises(pydantic.ValidationError):
        testing.call("sample.report", {"day": "2021-03-04", "pages": 0})


def test_call_runs_an_async_handler_with_a_fake_context() -> None:
    assert testing.call("sample.async_ok", run_id="r", attempt=2) == "r/2/r"


async def test_acall_from_a_running_loop_and_errors_propagate() -> None:
    assert await testing.acall("sample.async_ok", idempotency_key="k") == "test-run/1/k"
    with pytest.raises(ValueError, match="exploded"):
        await testing.acall("sample.async_fail")


def test_context_can_be_built_cancelled_with_a_fire_time() -> None:
    fire = datetime(2026, 1, 1, tzinfo=UTC)
    ctx = testing.context(cancelled=True, fire_time=fire, attempt=3)
    assert ctx.cancelled() and ctx.fire_time == fire and ctx.attempt == 3
    assert not testing.context(asynchronous=True).cancelled()

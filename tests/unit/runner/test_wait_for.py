"""base.wait_for races a result, a timeout and a cancel event, with either kind of event."""

from __future__ import annotations

import asyncio

import pytest

from sundial.runner import invocation
from sundial.runner.executors import base


@pytest.fixture(params=[invocation.CancelEvent, asyncio.Event], ids=["callbacks", "plain"])
def cancel(request: pytest.FixtureRequest) -> asyncio.Event:
    event: asyncio.Event = request.param()
    return event


async def test_a_result_in_time_is_done(cancel: asyncio.Event) -> None:
    future = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.set_result, 1)
    assert await base.wait_for(future, seconds=5, cancel=cancel) is base.Stop.DONE


async def test_no_result_in_time_is_a_timeout(cancel: asyncio.Event) -> None:
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    assert await base.wait_for(future, seconds=0.01, cancel=cancel) is base.Stop.TIMED_OUT


async def test_setting_the_event_cancels(cancel: asyncio.Event) -> None:
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(cancel.set)
    assert await base.wait_for(future, seconds=5, cancel=cancel) is base.Stop.CANCELLED


async def test_an_event_set_before_waiting_cancels_at_once(cancel: asyncio.Event) -> None:
    cancel.set()
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    assert await base.wait_for(future, seconds=5, cancel=cancel) is base.Stop.CANCELLED


def test_cancel_event_callbacks_run_once_and_can_be_removed() -> None:
    event = invocation.CancelEvent()
    calls: list[str] = []
    event.on_set(lambda: calls.append("kept"))
    remove = event.on_set(lambda: calls.append("removed"))
    remove()
    event.set()
    event.set()
    assert calls == ["kept"]
    event.on_set(lambda: calls.append("late"))
    assert calls == ["kept", "late"]

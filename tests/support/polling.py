"""Waiting for a condition something else brings about: the one poll loop of the tests.

Every wait has a deadline and fails naming what it waited for and the last value it saw, so a
failed wait says what did not happen. The bounds are generous: a wait ends as soon as its
condition holds, so only a failing test spends them. Polls come quickly at first (10 ms,
doubling) and then every ``every`` seconds, so a condition that holds at once costs no
sleep and a slow one (a Pod, a kubectl call) is not asked for many times a second.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

#: How long a wait lasts when the caller does not say: a bound for something that surely
#: happens, so it is sized for a loaded CI machine (2 cores at a load of 30), not a quiet one.
#: A wait ends when its condition holds; only a failing test spends it.
DEFAULT_WITHIN = 120.0
_FIRST_INTERVAL = 0.01


def wait_until(
    predicate: Callable[[], Any],
    *,
    within: float = DEFAULT_WITHIN,
    what: str = "",
    every: float = 0.2,
    tolerate: tuple[type[BaseException], ...] = (),
) -> Any:
    """Call ``predicate`` until it returns something truthy, and return that. An exception of
    a type in ``tolerate`` counts as "not yet" (a database or process that is restarting);
    any other fails at once. Fails after ``within`` seconds."""
    deadline = time.monotonic() + within
    pauses = _pauses(every)
    while True:
        try:
            last = predicate()
        except tolerate as error:
            last = error
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(_timed_out(within, what or predicate, last))
        time.sleep(next(pauses))


async def wait_until_async(
    check: Callable[[], Awaitable[Any] | Any],
    *,
    within: float = DEFAULT_WITHIN,
    what: str = "",
    every: float = 0.2,
    tolerate: tuple[type[BaseException], ...] = (),
) -> Any:
    """``wait_until`` for a test on the event loop: ``check`` may be a coroutine function
    (awaited) or a plain one (called on the loop: wrap a blocking call in
    ``asyncio.to_thread``); the loop keeps running between polls."""
    deadline = time.monotonic() + within
    pauses = _pauses(every)
    while True:
        try:
            last = check()
            if inspect.isawaitable(last):
                last = await last
        except tolerate as error:
            last = error
        else:
            if last:
                return last
        if time.monotonic() > deadline:
            raise AssertionError(_timed_out(within, what or check, last))
        await asyncio.sleep(next(pauses))


def _pauses(every: float) -> Iterator[float]:
    pause = min(_FIRST_INTERVAL, every)
    while True:
        yield pause
        pause = min(pause * 2, every)


def _timed_out(within: float, what: object, last: Any) -> str:
    return f"not met within {within:g}s: {what}; last: {last!r}"

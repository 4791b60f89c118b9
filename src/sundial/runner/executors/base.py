"""What every executor shares: resolving and validating a run before it starts, calling a
synchronous handler so that an exception becomes text instead of a raise, and waiting for a
result against a timeout and a cancellation event."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import enum
import traceback
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar

import pydantic

from sundial.api import error_text
from sundial.runner import invocation as invocation_module
from sundial.runner import outcomes, registry

T = TypeVar("T")

DEFAULT_TIMEOUT_SECONDS = 300.0


class Executor(Protocol):
    """``run`` never raises for what a handler does; it returns the attempt's outcome.

    ``size`` and ``busy`` are for sizing claims (claim at most ``size - busy`` runs) and for
    the saturation metric; executors queue rather than reject work beyond ``size``, and a
    queued attempt's timeout is already running.
    """

    name: str

    async def run(self, invocation: invocation_module.Invocation) -> outcomes.Outcome: ...

    @property
    def size(self) -> int: ...

    @property
    def busy(self) -> int: ...

    async def close(self) -> None: ...


class Prepared(NamedTuple):
    """A named tuple: one is built per attempt, and a tuple is the cheapest immutable record."""

    handler: registry.Handler
    args: Any
    timeout_seconds: float


def prepare(
    handlers: registry.Registry, invocation: invocation_module.Invocation
) -> Prepared | outcomes.Failed:
    """Look the handler up and validate its args; a failure here is final, not retryable."""
    try:
        handler = handlers.get(invocation.handler)
    except registry.UnknownHandlerError as error:
        return outcomes.Failed(str(error), outcomes.FailureDetail.UNKNOWN_HANDLER)
    try:
        args = handler.validate_args(invocation.args)
    except pydantic.ValidationError as error:
        return outcomes.Failed(
            f"arguments for handler {handler.name!r} are invalid: {error}",
            outcomes.FailureDetail.BAD_ARGS,
        )
    timeout = invocation.timeout_seconds or handler.timeout_seconds or DEFAULT_TIMEOUT_SECONDS
    return Prepared(handler, args, timeout)


def format_exception(error: BaseException) -> str:
    return error_text.truncate("".join(traceback.format_exception(error)))


def call_sync(function: Callable[..., Any], args: Any, context: Any) -> str | None:
    """Run a sync handler; None on success, else the traceback text (never raises).

    Catching here, inside the thread or worker process, keeps the original traceback and
    keeps exceptions that do not pickle from breaking a process pool.
    """
    try:
        function(args, context)
    except BaseException as error:  # a handler's SystemExit is its failure, not ours
        return format_exception(error)
    return None


class Stop(enum.Enum):
    DONE = "done"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


async def wait_for(awaitable: asyncio.Future[T], *, seconds: float, cancel: asyncio.Event) -> Stop:
    """Wait until ``awaitable`` is done, ``seconds`` pass or ``cancel`` is set."""
    if cancel.is_set():
        return Stop.CANCELLED
    if isinstance(cancel, invocation_module.CancelEvent):
        return await _wait_with_callbacks(awaitable, seconds=seconds, cancel=cancel)
    cancel_waiter: asyncio.Future[Any] = asyncio.ensure_future(cancel.wait())
    watched: set[asyncio.Future[Any]] = {awaitable, cancel_waiter}
    try:
        done, _ = await asyncio.wait(watched, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancel_waiter.cancel()
    if awaitable in done:
        return Stop.DONE
    if cancel_waiter in done:
        return Stop.CANCELLED
    return Stop.TIMED_OUT


async def _wait_with_callbacks(
    awaitable: asyncio.Future[T], *, seconds: float, cancel: invocation_module.CancelEvent
) -> Stop:
    """The same race as ``wait_for`` with no extra task: three callbacks and one future."""
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[Stop] = loop.create_future()

    def stop(reason: Stop) -> None:
        if not stopped.done():
            stopped.set_result(reason)

    def on_done(_: asyncio.Future[T]) -> None:
        stop(Stop.DONE)

    if awaitable.done():
        return Stop.DONE
    awaitable.add_done_callback(on_done)
    timer = loop.call_later(seconds, stop, Stop.TIMED_OUT)
    remove = cancel.on_set(lambda: stop(Stop.CANCELLED))
    try:
        return await stopped
    finally:
        timer.cancel()
        remove()
        awaitable.remove_done_callback(on_done)


def bridge(future: concurrent.futures.Future[T]) -> asyncio.Future[T]:
    """Like ``asyncio.wrap_future`` but safe to abandon: a thread that finishes after its
    attempt timed out, or after the loop closed, completes a future nobody awaits without
    logging "exception was never retrieved" or "event loop is closed"."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[T] = loop.create_future()

    def copy(source: concurrent.futures.Future[T]) -> None:
        if result.done():
            return
        error = source.exception()
        if error is not None:
            result.set_exception(error)
            # Reading it marks it retrieved even if no one awaits the future any more.
            result.exception()
        else:
            result.set_result(source.result())

    def on_done(source: concurrent.futures.Future[T]) -> None:
        if source.cancelled():
            return
        # RuntimeError: the loop is closed, so nobody is waiting.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(copy, source)

    future.add_done_callback(on_done)
    return result

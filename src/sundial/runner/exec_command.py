"""``sundial exec``: run one registered handler in the foreground; the exit code is the outcome.

Used by the subprocess executor and, later, by pod-mode runs. The run's identity comes from
the environment (``SUNDIAL_RUN_ID``, ``SUNDIAL_ATTEMPT``, ``SUNDIAL_FENCING_TOKEN`` (the
attempt when unset), ``SUNDIAL_IDEMPOTENCY_KEY``, ``SUNDIAL_FIRE_TIME``, ``SUNDIAL_RUN_AT`` and
``SUNDIAL_STARTED_AT`` as ISO 8601), the args as a JSON object from ``--args-file`` or
``SUNDIAL_ARGS``. SIGTERM sets the handler's
cancellation event (and cancels an async handler's task); whoever sent it follows up with
SIGKILL after a grace period. Started by a runner, it watches the runner's lifeline
(``SUNDIAL_LIFELINE_FD``) and kills its process group when the runner dies.

Log records, the handler's ``ctx.logger`` lines among them, go to stdout as JSON lines (the
CLI configures :mod:`sundial.observability.json_logs`), so ``kubectl logs`` of a handler Pod shows
them; stderr carries only the reason of a failure (a traceback, a bad argument), which the
subprocess executor keeps as the run's error.

Exit codes (stable; pod ``failurePolicy`` rules may match them):

==== ==================================================================
0    succeeded
1    the handler raised (traceback on stderr)
2    usage error (click's own code: a missing option, a bad flag)
3    bad arguments: not a JSON object, too large, or rejected by the args model
4    unknown handler: not registered by the --handlers modules
5    a --handlers module failed to import
6    bad run environment (e.g. SUNDIAL_ATTEMPT is not an integer)
143  cancelled by SIGTERM (128 + 15, the shell's convention)
==== ==================================================================
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import pydantic

from sundial.runner import context, lifeline, registry
from sundial.runner.executors import base

EXIT_SUCCEEDED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BAD_ARGS = 3
EXIT_UNKNOWN_HANDLER = 4
EXIT_HANDLERS_IMPORT_FAILED = 5
EXIT_BAD_ENVIRONMENT = 6
EXIT_CANCELLED = 128 + signal.SIGTERM

#: The most bytes of JSON read as the arguments (from the environment or a file): a bound on
#: what a broken caller can make this process read, well past the store's bound on ``args``.
MAX_INPUT_BYTES = 1024 * 1024


class _BadEnvironment(ValueError):
    pass


def run(
    handler_name: str,
    handler_modules: Sequence[str],
    *,
    args_text: str | None,
    environ: Mapping[str, str],
) -> int:
    """Run the handler and return the process exit code; reasons go to stderr."""
    lifeline.watch_from_environment(environ)
    try:
        handlers = registry.load_handlers(tuple(handler_modules))
    except registry.HandlersImportError as error:
        _say(str(error))
        return EXIT_HANDLERS_IMPORT_FAILED
    try:
        handler = handlers.get(handler_name)
    except registry.UnknownHandlerError as error:
        _say(str(error))
        return EXIT_UNKNOWN_HANDLER
    try:
        raw_args = _parse_args(args_text)
        args = handler.validate_args(raw_args)
    except (ValueError, pydantic.ValidationError) as error:
        _say(f"arguments for handler {handler_name!r} are invalid: {error}")
        return EXIT_BAD_ARGS
    try:
        identity = _identity(environ)
    except _BadEnvironment as error:
        _say(str(error))
        return EXIT_BAD_ENVIRONMENT
    if handler.is_coroutine:
        return asyncio.run(_run_async(handler, args, identity))
    return _run_sync(handler, args, identity)


def _run_sync(handler: registry.Handler, args: Any, identity: dict[str, Any]) -> int:
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        ctx = context.make(handler=handler.name, cancel_event=stop, **identity)
        error_text = base.call_sync(handler.function, args, ctx)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if error_text is not None:
        _say(error_text)
        return EXIT_CANCELLED if stop.is_set() else EXIT_FAILED
    return EXIT_CANCELLED if stop.is_set() else EXIT_SUCCEEDED


async def _run_async(handler: registry.Handler, args: Any, identity: dict[str, Any]) -> int:
    stop = asyncio.Event()
    ctx = context.make(handler=handler.name, cancel_event=stop, **identity)
    task: asyncio.Task[object] = asyncio.ensure_future(handler.function(args, ctx))

    def on_sigterm() -> None:
        stop.set()
        task.cancel()

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    try:
        await task
    except asyncio.CancelledError:
        return EXIT_CANCELLED
    except BaseException as error:
        _say(base.format_exception(error))
        return EXIT_CANCELLED if stop.is_set() else EXIT_FAILED
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    return EXIT_CANCELLED if stop.is_set() else EXIT_SUCCEEDED


def _parse_args(text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    if len(text.encode()) > MAX_INPUT_BYTES:
        raise ValueError(f"arguments are larger than {MAX_INPUT_BYTES} bytes")
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"arguments must be a JSON object, not {type(value).__name__}")
    return value


def _identity(environ: Mapping[str, str]) -> dict[str, Any]:
    attempt = _integer(environ, "SUNDIAL_ATTEMPT", "1")
    run_id = environ.get("SUNDIAL_RUN_ID", "local")
    return {
        "namespace": environ.get("SUNDIAL_NAMESPACE") or None,
        "run_id": run_id,
        "attempt": attempt,
        "fencing_token": _integer(environ, "SUNDIAL_FENCING_TOKEN", str(attempt)),
        "idempotency_key": environ.get("SUNDIAL_IDEMPOTENCY_KEY", run_id),
        "fire_time": _time(environ, "SUNDIAL_FIRE_TIME"),
        "run_at": _time(environ, "SUNDIAL_RUN_AT"),
        "started_at": _time(environ, "SUNDIAL_STARTED_AT"),
    }


def _integer(environ: Mapping[str, str], name: str, default: str) -> int:
    text = environ.get(name) or default
    try:
        return int(text)
    except ValueError:
        raise _BadEnvironment(f"{name}={text!r} is not an integer") from None


def _time(environ: Mapping[str, str], name: str) -> datetime | None:
    text = environ.get(name) or None
    if text is None:
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise _BadEnvironment(f"{name}={text!r} is not an ISO 8601 time") from None


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def environment_for(
    *,
    run_id: str,
    attempt: int,
    idempotency_key: str,
    fire_time: datetime | None,
    args: Mapping[str, Any],
    namespace: str | None = None,
    run_at: datetime | None = None,
    started_at: datetime | None = None,
    fencing_token: int | None = None,
) -> dict[str, str]:
    """The variables ``sundial exec`` reads, for whoever starts it (subprocess or pod)."""
    variables = {
        "SUNDIAL_RUN_ID": run_id,
        "SUNDIAL_ATTEMPT": str(attempt),
        "SUNDIAL_FENCING_TOKEN": str(attempt if fencing_token is None else fencing_token),
        "SUNDIAL_IDEMPOTENCY_KEY": idempotency_key,
        "SUNDIAL_ARGS": json.dumps(dict(args), default=str),
    }
    for name, moment in (
        ("SUNDIAL_FIRE_TIME", fire_time),
        ("SUNDIAL_RUN_AT", run_at),
        ("SUNDIAL_STARTED_AT", started_at),
    ):
        if moment is not None:
            variables[name] = moment.isoformat()
    if namespace is not None:
        variables["SUNDIAL_NAMESPACE"] = namespace
    return variables


def read_args(args_file: str | None, environ: Mapping[str, str]) -> str | None:
    if args_file is not None:
        with open(args_file, encoding="utf-8") as file:
            return file.read(MAX_INPUT_BYTES + 1)
    return environ.get("SUNDIAL_ARGS")


__all__ = ["environment_for", "read_args", "run"]

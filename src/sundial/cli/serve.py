"""What every daemon does the same way: JSON logs, and SIGINT/SIGTERM as a clean stop.

``sundial scheduler`` and ``sundial pod-launcher`` use both; ``sundial runner`` drains through
``runner.shutdown`` and ``sundial operator`` stops through its runtime (kopf installs its own
handlers), and both log through the same ``configure_logs``.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import click

from sundial.observability import json_logs as json_logging
from sundial.store import errors as store_errors

__all__ = ["configure_logs", "refused_at_start", "stop_on_signals"]


def configure_logs(level: str) -> None:
    """JSON lines with the stable keys of ``observability.json_logs``, at ``level``."""
    json_logging.configure(level.upper())


def stop_on_signals() -> asyncio.Event:
    """An event that SIGINT or SIGTERM sets. Call it first thing inside the running loop, so
    a stop that arrives while the process is still starting (opening its pool) is a clean exit
    too, not a default SIGTERM death."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


@contextlib.contextmanager
def refused_at_start(command: str) -> Iterator[None]:
    """A daemon whose code cannot run against the database's schema, whose database login
    may not see what it was told to serve, or whose hot-queue setting disagrees with the
    database's, exits 1 with the store's message (what to change)
    as its last line, not a traceback: under Kubernetes that line is what ``kubectl logs
    --previous`` shows."""
    try:
        yield
    except (
        store_errors.SchemaMismatchError,
        store_errors.LoginNamespacesError,
        store_errors.HotQueueModeError,
    ) as error:
        raise click.ClickException(f"{command} does not start: {error}") from None

"""``sundial runs``: the full run history, and cancel and replay, with only PostgreSQL."""

from __future__ import annotations

import contextlib
import unicodedata
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NoReturn

import click

from sundial.cli.app import main

if TYPE_CHECKING:
    from sundial.store.pool import Pool


EXIT_RUN_REFUSED = 1
#: ``sundial runs cancel`` / ``replay``: there is no run with that id.
EXIT_NO_SUCH_RUN = 3

_RUN_EXIT_CODES = """\b
Exit codes:
  0  done
  1  the run's state does not allow it (the message says why and what to do)
  2  usage error (a missing --dsn, a bad RUN_ID)
  3  there is no run with that id"""


#: A run id is a PostgreSQL bigint, and ids start at 1.
MAX_RUN_ID = 2**63 - 1


class RunIdType(click.ParamType[int]):
    """A run id as `sundial runs` prints it: ASCII digits, 1 to 2**63-1.

    ``int()`` alone is too lenient for an id a person types or pastes: it takes ``' 7 '``,
    ``'1_000'`` and other scripts' digits (``'٣'`` is 3), and a number past bigint would reach
    PostgreSQL as an error. Anything else is a usage error (exit 2) that says what an id is.
    """

    name = "run_id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        text = str(value)
        shown = ascii(text) if len(text) <= 40 else ascii(text[:37]) + "..."
        if not text.isascii() or not text.isdigit():
            self.fail(
                f"{shown} is not a run id: give the number `sundial runs` shows in its ID"
                " column (ASCII digits only)",
                param,
                ctx,
            )
        number = int(text)
        if not 1 <= number <= MAX_RUN_ID:
            self.fail(f"{shown} is not a run id: ids run from 1 to {MAX_RUN_ID}", param, ctx)
        return number


RUN_ID = RunIdType()


def _refuse(message: str, exit_code: int) -> NoReturn:
    """``Error: <message>`` on stderr, then exit with the command's documented code."""
    click.echo(f"Error: {message}", err=True)
    raise click.exceptions.Exit(exit_code)


#: ``--dsn`` of ``sundial runs``: required to list, or given to a subcommand instead.
_optional_dsn_option = click.option(
    "--dsn",
    envvar="SUNDIAL_DSN",
    default=None,
    help="libpq URL of the PostgreSQL database (or SUNDIAL_DSN).",
)


def _require_dsn(ctx: click.Context, dsn: str | None) -> str:
    """``dsn``, else the one given to ``sundial runs``; a usage error (exit 2) without one."""
    parent = ctx.parent.params.get("dsn") if ctx.parent is not None else None
    chosen = dsn or parent
    if not chosen:
        [param] = [p for p in ctx.command.params if p.name == "dsn"]
        raise click.MissingParameter(ctx=ctx, param=param)
    return str(chosen)


@main.group("runs", invoke_without_command=True)
@_optional_dsn_option
@click.option("--job", default=None, help="Only this job: namespace/name (or name in default).")
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.pass_context
def runs_(ctx: click.Context, dsn: str | None, job: str | None, limit: int) -> None:
    """List the newest runs from PostgreSQL: the full history, not only the JobRun window.

    With a command, act on one run without the operator: `sundial runs cancel RUN_ID`,
    `sundial runs replay RUN_ID`.
    """
    if ctx.invoked_subcommand is not None:
        return
    _list_runs(_require_dsn(ctx, dsn), job, limit)


def _list_runs(dsn: str, job: str | None, limit: int) -> None:
    import asyncio

    from sundial.store import history
    from sundial.store import pool as store_pool

    namespace = name = None
    if job is not None:
        if any(unicodedata.category(c) in ("Cc", "Cs") for c in job):
            raise click.BadParameter(
                "give namespace/name (or a name in default) without control characters",
                param_hint="--job",
            )
        namespace, slash, name = job.partition("/")
        if not slash:
            namespace, name = "default", job

    async def read() -> list[history.HistoryRow]:
        opened = await store_pool.open_pool(dsn, min_size=1, max_size=1, name="sundial-runs")
        try:
            return await history.recent(opened, namespace=namespace, job=name, limit=limit)
        finally:
            await opened.close()

    def when(moment: object) -> str:
        return "-" if moment is None else f"{moment:%Y-%m-%dT%H:%M:%SZ}"

    rows = asyncio.run(read())
    header = (
        "ID",
        "JOB",
        "STATE",
        "ATTEMPT",
        "FIRE TIME",
        "STARTED",
        "FINISHED",
        "REASON",
        "DETAIL",
        "POD",
        "EXIT",
        "POD REASON",
    )
    table = [header] + [
        (
            str(row.id),
            f"{row.namespace}/{row.job}",
            row.state,
            str(row.attempt),
            when(row.fire_time),
            when(row.started_at),
            when(row.finished_at),
            "Unclaimable" if row.unclaimable_reason else (row.failure_reason or "-"),
            row.failure_detail or "-",
            row.pod_name or "-",
            "-" if row.pod_exit_code is None else str(row.pod_exit_code),
            row.pod_reason or "-",
        )
        for row in rows
    ]
    widths = [max(len(line[column]) for line in table) for column in range(len(header))]
    for line in table:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
    # Why a run waits is a sentence, too long for a column: under the table, one per run.
    for row in rows:
        if row.unclaimable_reason:
            click.echo(f"run {row.id} is unclaimable: {row.unclaimable_reason}")


@runs_.command("cancel", epilog=_RUN_EXIT_CODES)
@click.argument("run_id", type=RUN_ID)
@click.option(
    "--reason",
    default="sundial runs cancel",
    show_default=True,
    help="Why; the run's last error becomes 'cancelled: REASON'.",
)
@_optional_dsn_option
@click.pass_context
def runs_cancel(ctx: click.Context, run_id: int, reason: str, dsn: str | None) -> None:
    """Cancel the run RUN_ID, as deleting its JobRun or `spec.cancel` would.

    A run that has not started (scheduled, blocked, pending, retry_wait) ends cancelled now,
    and the runs that depend on it are cancelled with it. A running run is asked to stop: its
    worker (a runner, or the pod launcher, which deletes its Pod) ends it cancelled at its next
    heartbeat, within a third of its lease; if its worker is gone, the reaper ends it cancelled
    once its lease expires. A finished run is left as it is (exit 1).
    """
    import asyncio

    from sundial.scheduling import run_state
    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)
    text = reason.strip()
    if not text:
        raise click.BadParameter("give a reason, or leave --reason out", param_hint="--reason")
    if any(unicodedata.category(c) in ("Cc", "Cs") and c not in "\t\n" for c in text):
        raise click.BadParameter(
            "give a reason without control characters (NUL and the like)", param_hint="--reason"
        )
    recorded = f"cancelled: {text}"
    if len(recorded.encode()) > 8192:  # job_runs.cancel_reason's CHECK (migration 0070)
        raise click.BadParameter("at most 8,000 bytes", param_hint="--reason")

    async def cancel() -> tuple[runs.CancelResult, runs.RunInfo | None]:
        async with _store_pool(database) as pool:
            result = await runs.cancel(pool, run_id, reason=recorded)
            info = await runs.get(pool, run_id)
            return result, info

    try:
        result, info = asyncio.run(cancel())
    except errors.NoSuchRunError as error:
        _refuse(str(error), EXIT_NO_SUCH_RUN)
    if result is runs.CancelResult.CANCELLED:
        click.echo(f"run {run_id} cancelled (it had not started; its dependents are cancelled)")
    elif result is runs.CancelResult.REQUESTED:
        owner = info.lease_owner if info is not None and info.lease_owner else "its worker"
        click.echo(
            f"run {run_id} is running: cancel requested; {owner} ends it cancelled at its next"
            f" heartbeat (`sundial runs` shows the end)"
        )
    else:
        state = info.state if info is not None else "finished"
        hint = (
            f"; to run it again: sundial runs replay {run_id}" if state in run_state.FAILED else ""
        )
        _refuse(
            f"run {run_id} cannot be cancelled: it already ended {state}, nothing is left to"
            f" stop{hint}",
            EXIT_RUN_REFUSED,
        )


@runs_.command("replay", epilog=_RUN_EXIT_CODES)
@click.argument("run_id", type=RUN_ID)
@_optional_dsn_option
@click.pass_context
def runs_replay(ctx: click.Context, run_id: int, dsn: str | None) -> None:
    """Put the dead-lettered, failed or timed-out run RUN_ID back in the queue.

    It stays the same run with a fresh retry budget (retries, OOM and infrastructure retries);
    its next claim is a new attempt, so fencing tokens are never reused. Runs that depended on
    it and were already failed stay failed: submit them again. A run archived out of the live
    table cannot be replayed (exit 1): submit its job again.
    """
    import asyncio

    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)

    async def replay() -> int:
        async with _store_pool(database) as pool:
            return await runs.replay(pool, run_id)

    try:
        attempt = asyncio.run(replay())
    except errors.NoSuchRunError as error:
        _refuse(str(error), EXIT_NO_SUCH_RUN)
    except errors.RunNotReplayableError as error:
        _refuse(str(error), EXIT_RUN_REFUSED)
    click.echo(
        f"run {run_id} replayed: pending with a fresh retry budget; its next claim is"
        f" attempt {attempt + 1}"
    )


@contextlib.asynccontextmanager
async def _store_pool(dsn: str) -> AsyncIterator[Pool]:
    from sundial.store import pool as store_pool

    opened = await store_pool.open_pool(dsn, min_size=1, max_size=1, name="sundial-runs")
    try:
        yield opened
    finally:
        await opened.close()

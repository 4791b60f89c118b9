"""``sundial runs``: the full run history, and cancel and replay, with only PostgreSQL."""

from __future__ import annotations

import contextlib
import datetime
import json
import unicodedata
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, TypeVar

import click

from sundial.cli import options
from sundial.cli.app import main

if TYPE_CHECKING:
    from sundial.store import history
    from sundial.store.pool import Pool

_T = TypeVar("_T")


#: Exit codes of ``sundial runs`` and its commands (each command's --help lists its own).
EXIT_RUN_REFUSED = 1
#: ``sundial runs cancel`` / ``replay``: there is no run with that id.
EXIT_NO_SUCH_RUN = 3
#: ``sundial runs submit``: there is no active job of that name or uid.
EXIT_NO_SUCH_JOB = 3
#: PostgreSQL cannot be reached (or refused the login): the message says what to check.
EXIT_STORE_UNAVAILABLE = 4

_RUN_EXIT_CODES = """\b
Exit codes:
  0  done
  1  the run's state does not allow it (the message says why and what to do)
  2  usage error (a missing --dsn, a bad RUN_ID)
  3  there is no run with that id
  4  PostgreSQL cannot be reached (check --dsn / SUNDIAL_DSN and the server)"""

_LIST_EXIT_CODES = """\b
Exit codes:
  0  listed (also when no run matches)
  2  usage error (a missing --dsn, a bad --state, --since or --job)
  4  PostgreSQL cannot be reached (check --dsn / SUNDIAL_DSN and the server)

\b
-o json prints one JSON object per line, one line per run, newest first, with the keys:
  runId (string), namespace, job, state, attempt, queue, createdAt, runAt, fireTime,
  startedAt, finishedAt (RFC 3339 UTC or null), failureReason, failureDetail, podName,
  podExitCode, podReason, lastError, and waiting: null, or {"reason": R, "message": M} for
  a run that has not finished and is not running (R: Unclaimable, WaitingForUpstream,
  RetryBudgetSpent, CircuitOpen, RetryBackoff, RunAtInFuture, WaitingForRunner)."""

_SUBMIT_EXIT_CODES = """\b
Exit codes:
  0  submitted; or the idempotency key was used before with the same args: that run's id
  1  refused: the key was used before with other args, or the args are too large
  2  usage error (a missing --dsn, bad --args JSON, --delay with --run-at, a bad file)
  3  there is no active job of that name or uid
  4  PostgreSQL cannot be reached (check --dsn / SUNDIAL_DSN and the server)"""


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


class StatesType(click.ParamType[frozenset[str], object]):
    """``--state``: run states, repeated or comma-separated (``pending,blocked``).

    Each is a ``RunState`` as ``job_runs.state`` spells it, or one of the sets every part of
    Sundial means by these words (``active``, ``finished``, ``failed``; ``run_state``)."""

    name = "state"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> frozenset[str]:
        from sundial.scheduling import run_state

        if isinstance(value, frozenset):
            return value
        sets = {
            "active": run_state.ACTIVE,
            "finished": run_state.FINISHED,
            "failed": run_state.FAILED,
        }
        chosen: set[str] = set()
        for word in str(value).split(","):
            word = word.strip().lower()
            if word in sets:
                chosen |= sets[word]
                continue
            try:
                chosen.add(run_state.RunState(word))
            except ValueError:
                shown = ascii(word[:40])
                self.fail(
                    f"{shown} is not a run state: use "
                    + ", ".join(state.value for state in run_state.RunState)
                    + ", or a set: active, finished, failed (repeat --state or separate with"
                    " commas)",
                    param,
                    ctx,
                )
        return frozenset(chosen)


def _timestamp(text: str) -> datetime.datetime | None:
    """An RFC 3339 time with its offset (``Z`` or ``+01:00``) in UTC; None if it is not one."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None or "T" not in text.upper():
        return None
    return moment.astimezone(datetime.UTC)


class TimestampType(click.ParamType[datetime.datetime, object]):
    """``--run-at``: an RFC 3339 time with its offset."""

    name = "timestamp"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime.datetime:
        if isinstance(value, datetime.datetime):
            return value
        text = str(value).strip()
        moment = _timestamp(text)
        if moment is None:
            self.fail(
                f"{text[:40]!a} is not an RFC 3339 time: write it with its offset, like"
                " 2026-12-01T09:00:00Z (for a duration from now, use --delay)",
                param,
                ctx,
            )
        return moment


class SinceType(click.ParamType[datetime.datetime, object]):
    """``--since``: a duration back from now (``10m``, ``2h``, ``3d``) or an RFC 3339 time."""

    name = "duration|timestamp"

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> datetime.datetime:
        if isinstance(value, datetime.datetime):
            return value
        text = str(value).strip()
        if text[:1].isdigit() and text[-1:].lower() in ("s", "m", "h", "d") and "-" not in text:
            seconds = options.Duration().convert(text, param, ctx)
            return datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=seconds)
        moment = _timestamp(text)
        if moment is None:
            self.fail(
                f"{text[:40]!a} is neither a duration nor an RFC 3339 time: write 10m, 2h,"
                " 3d, or a time with its offset like 2026-12-01T09:00:00Z",
                param,
                ctx,
            )
        return moment


def _job_option_value(job: str | None) -> tuple[str | None, str | None]:
    """``--job``'s namespace and name; a usage error for one no job can have."""
    if job is None:
        return None, None
    if not job or any(unicodedata.category(c) in ("Cc", "Cs") for c in job):
        raise click.BadParameter(
            "give namespace/name (or a name in default) without control characters",
            param_hint="--job",
        )
    namespace, slash, name = job.partition("/")
    if not slash:
        namespace, name = "default", job
    return namespace, name


@main.group("runs", invoke_without_command=True, epilog=_LIST_EXIT_CODES)
@_optional_dsn_option
@click.option("--job", default=None, help="Only this job: namespace/name (or name in default).")
@click.option(
    "--state",
    "states",
    type=StatesType(),
    multiple=True,
    help="Only runs in this state (repeatable, or a comma list): scheduled, blocked, pending,"
    " running, retry_wait, completed, failed, timed_out, cancelled, dead_lettered; or active,"
    " finished, failed.",
)
@click.option(
    "--since",
    type=SinceType(),
    default=None,
    help="Only runs created since: a duration back from now (10m, 2h, 3d) or an RFC 3339"
    " time (2026-12-01T09:00:00Z).",
)
@click.option("--limit", type=click.IntRange(1, 100_000), default=50, show_default=True)
@click.option(
    "-o",
    "--output",
    "output_format",
    type=click.Choice(["table", "wide", "json"]),
    default="table",
    show_default=True,
    help="table; wide (adds QUEUE, RUN AT and WAITING: why a run waits); json (one object per"
    " line, keys below).",
)
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis, when the database's hot queue is on: the runs a claimer holds"
    " there are listed running (the record says pending until they finish).",
)
@click.pass_context
def runs_(
    ctx: click.Context,
    dsn: str | None,
    job: str | None,
    states: tuple[frozenset[str], ...],
    since: datetime.datetime | None,
    limit: int,
    output_format: str,
    hot_queue_url: str | None,
) -> None:
    """List the newest runs from PostgreSQL: the full history, not only the JobRun window.

    Every run that has not finished and is not running says why it waits (no runner serves
    its queue or execution model, an upstream run is unfinished, a retry is deferred or backs
    off, its run time is ahead): in WAITING with -o wide, in "waiting" with -o json; the
    table names unclaimable runs under it.

    With a command, act on runs without the operator: `sundial runs submit JOB`,
    `sundial runs cancel RUN_ID`, `sundial runs replay RUN_ID`.
    """
    if ctx.invoked_subcommand is not None:
        return
    namespace, name = _job_option_value(job)
    chosen = frozenset().union(*states) if states else None
    database = _require_dsn(ctx, dsn)

    async def read() -> list[history.HistoryRow]:
        async with connected(database) as pool, hot_queue_client(hot_queue_url) as hot:
            return await history.recent(
                pool,
                namespace=namespace,
                job=name,
                limit=limit,
                states=chosen,
                since=since,
                hot=hot,
            )

    from sundial.store import history

    rows = run_store_work(read())
    if output_format == "json":
        for row in rows:
            click.echo(json.dumps(_row_json(row), ensure_ascii=False, sort_keys=True))
        return
    _print_table(rows, wide=output_format == "wide")


def _row_json(row: history.HistoryRow) -> dict[str, Any]:
    """One run for ``-o json``: the history endpoint's keys and a few more (see --help)."""
    from sundial.operator import history_api

    return history_api.row_json(row)


def _when(moment: datetime.datetime | None) -> str:
    return "-" if moment is None else f"{moment.astimezone(datetime.UTC):%Y-%m-%dT%H:%M:%SZ}"


def _print_table(rows: Sequence[history.HistoryRow], *, wide: bool) -> None:
    header: tuple[str, ...] = (
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
    if wide:
        header += ("QUEUE", "RUN AT", "WAITING")
    table: list[tuple[str, ...]] = [header]
    waits = {row.id: row.why_it_waits() for row in rows}
    for row in rows:
        line: tuple[str, ...] = (
            str(row.id),
            f"{row.namespace}/{row.job}",
            row.state,
            str(row.attempt),
            _when(row.fire_time),
            _when(row.started_at),
            _when(row.finished_at),
            "Unclaimable" if row.unclaimable_reason else (row.failure_reason or "-"),
            row.failure_detail or "-",
            row.pod_name or "-",
            "-" if row.pod_exit_code is None else str(row.pod_exit_code),
            row.pod_reason or "-",
        )
        if wide:
            found = waits[row.id]
            line += (
                row.queue or "-",
                _when(row.run_at),
                f"{found.reason}: {found.message}" if found else "-",
            )
        table.append(line)
    widths = [max(len(line[column]) for line in table) for column in range(len(header))]
    for line in table:
        click.echo(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
    if wide:
        return
    # The table stays as it was: a sentence too long for a column, for unclaimable runs only
    # (-o wide and -o json say why every waiting run waits).
    for row in rows:
        found = waits[row.id]
        if found is not None and found.reason == "Unclaimable":
            click.echo(f"run {row.id} is unclaimable: {found.message}")


@runs_.command("cancel", epilog=_RUN_EXIT_CODES)
@click.argument("run_id", type=RUN_ID)
@click.option(
    "--reason",
    default="sundial runs cancel",
    show_default=True,
    help="Why; the run's last error becomes 'cancelled: REASON'.",
)
@_optional_dsn_option
@click.option(
    "--hot-queue-url",
    envvar="SUNDIAL_HOT_QUEUE_URL",
    default=None,
    help="The hot queue's Redis; required when the database's hot queue is on: a run a claimer"
    " holds there is asked to stop as a running run is.",
)
@click.pass_context
def runs_cancel(
    ctx: click.Context, run_id: int, reason: str, dsn: str | None, hot_queue_url: str | None
) -> None:
    """Cancel the run RUN_ID, as deleting its JobRun or `spec.cancel` would.

    A run that has not started (scheduled, blocked, pending, retry_wait) ends cancelled now,
    and the runs that depend on it are cancelled with it. A running run is asked to stop: its
    worker (a runner, or the pod launcher, which deletes its Pod) ends it cancelled at its next
    heartbeat, within a third of its lease; if its worker is gone, the reaper ends it cancelled
    once its lease expires. A finished run is left as it is (exit 1).
    """
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
        async with connected(database) as pool, hot_queue_client(hot_queue_url) as hot:
            if hot is None:
                from sundial.store.hot_queue import outbox

                if await outbox.is_on(pool):
                    raise errors.HotQueueModeError(
                        "the hot queue is on for this database: give --hot-queue-url"
                        " (SUNDIAL_HOT_QUEUE_URL), so that a run a runner holds in Redis is asked"
                        " to stop, not ended in the record while it still runs"
                    )
            result = await runs.cancel(pool, run_id, reason=recorded, hot=hot)
            info = await runs.get(pool, run_id, hot=hot)
            return result, info

    try:
        result, info = run_store_work(cancel())
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
    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)

    async def replay() -> int:
        async with connected(database) as pool:
            return await runs.replay(pool, run_id)

    try:
        attempt = run_store_work(replay())
    except errors.NoSuchRunError as error:
        _refuse(str(error), EXIT_NO_SUCH_RUN)
    except errors.RunNotReplayableError as error:
        _refuse(str(error), EXIT_RUN_REFUSED)
    click.echo(
        f"run {run_id} replayed: pending with a fresh retry budget; its next claim is"
        f" attempt {attempt + 1}"
    )


@runs_.command("submit", epilog=_SUBMIT_EXIT_CODES)
@click.argument("job")
@click.option("--args", "args_text", default=None, help="The run's arguments: a JSON object.")
@click.option(
    "--queue", default=None, help="Send the run to this runner queue (default: the job's)."
)
@click.option(
    "--priority",
    type=click.IntRange(0, 9),
    default=None,
    help="0 (lowest) to 9 (most urgent); default: the job's.",
)
@click.option(
    "--delay", type=options.Duration(), default=None, help="Run after this long: 90s, 30m, 1h, 2d."
)
@click.option(
    "--run-at",
    type=TimestampType(),
    default=None,
    help="Run at this RFC 3339 time (2026-12-01T09:00:00Z); not with --delay.",
)
@click.option(
    "--idempotency-key",
    default=None,
    help="Submit once: the same key with the same args returns the first run (exit 0).",
)
@click.option(
    "--from-file",
    "from_file",
    type=click.File("r", encoding="utf-8"),
    default=None,
    help="Many runs of JOB in one transaction: a JSON array (or JSON lines) of objects with"
    " any of args, queue, priority, delaySeconds, runAt, idempotencyKey ('-': stdin).",
)
@_optional_dsn_option
@click.pass_context
def runs_submit(
    ctx: click.Context,
    job: str,
    args_text: str | None,
    queue: str | None,
    priority: int | None,
    delay: float | None,
    run_at: datetime.datetime | None,
    idempotency_key: str | None,
    from_file: TextIO | None,
    dsn: str | None,
) -> None:
    """Submit a run of JOB (namespace/name, a name in default, or the job's uid) and print
    its id; with --from-file, many runs, all or none, one id per line in the file's order.

    The run is the job's as its ScheduledJob defines it (handler, retries, timeout); the
    options change only this run. With --from-file, the other options are defaults for each
    item that does not set its own.
    """
    from sundial.store import errors, runs

    database = _require_dsn(ctx, dsn)
    if delay is not None and run_at is not None:
        raise click.UsageError("give --delay or --run-at, not both")
    far = _too_far_ahead(delay, run_at, "--delay", "--run-at")
    if far:
        raise click.UsageError(far)
    args = _json_args(args_text, "--args")
    default = runs.BatchItem(
        args=args,
        priority=priority,
        run_at=run_at,
        delay_seconds=delay or 0.0,
        idempotency_key=idempotency_key,
        queue=queue,
    )
    items = [default] if from_file is None else _batch_items(from_file, default)

    async def submit() -> list[runs.Submitted]:
        async with connected(database) as pool:
            if from_file is None:
                one = await runs.submit(
                    pool,
                    job,
                    args=default.args,
                    priority=default.priority,
                    run_at=default.run_at,
                    delay_seconds=default.delay_seconds,
                    idempotency_key=default.idempotency_key,
                    queue=default.queue,
                )
                return [one]
            return await runs.submit_many(pool, job, items)

    try:
        submitted = run_store_work(submit())
    except errors.UnknownJobError as error:
        _refuse(str(error), EXIT_NO_SUCH_JOB)
    except (errors.IdempotencyConflictError, errors.ArgsTooLargeError) as error:
        _refuse(str(error), EXIT_RUN_REFUSED)
    except errors.InvalidSubmissionError as error:
        raise click.UsageError(str(error)) from None
    for result in submitted:
        click.echo(str(result.run_id))
    if from_file is None and not submitted[0].created:
        click.echo(
            f"run {submitted[0].run_id} was submitted before with this idempotency key"
            f" (now {submitted[0].state or 'archived'}); nothing new was created",
            err=True,
        )


def _json_args(text: str | None, where: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as error:
        raise click.BadParameter(f"not JSON ({error})", param_hint=where) from None
    if not isinstance(value, dict):
        raise click.BadParameter(
            'give a JSON object, like \'{"day": "2026-12-01"}\'', param_hint=where
        )
    return value


#: The keys an item of --from-file may have, with the JobRun spec's spelling.
def _too_far_ahead(
    delay: float | None, run_at: datetime.datetime | None, delay_name: str, run_at_name: str
) -> str | None:
    """What is wrong, in the option's or key's own name, with a run due more than a year and a
    day ahead (the bound the store keeps: such a run belongs to a schedule); ``None``: fine."""
    from sundial.api import job_run

    ahead = job_run.MAX_AHEAD
    if delay is not None and delay > ahead.total_seconds():
        return (
            f"{delay_name} is at most {ahead.days} days ({ahead.total_seconds():.0f} s); a run"
            " further out belongs to a ScheduledJob"
        )
    now = datetime.datetime.now(datetime.UTC)
    if run_at is not None and run_at > now + ahead:
        return (
            f"{run_at_name} {run_at.isoformat()} is more than {ahead.days} days ahead; a run"
            " further out belongs to a ScheduledJob"
        )
    return None


_ITEM_KEYS = frozenset({"args", "queue", "priority", "delaySeconds", "runAt", "idempotencyKey"})


def _batch_items(source: TextIO, default: Any) -> list[Any]:
    """--from-file's runs: a JSON array, or one object per line; each a usage error if bad."""
    from sundial.store import runs

    text = source.read()
    name = getattr(source, "name", "--from-file")
    try:
        parsed = json.loads(text) if text.lstrip().startswith("[") else None
        if parsed is None:
            parsed = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as error:
        raise click.BadParameter(
            f"{name} is not a JSON array nor JSON lines ({error})", param_hint="--from-file"
        ) from None
    if not isinstance(parsed, list) or not parsed:
        raise click.BadParameter(f"{name} holds no runs", param_hint="--from-file")
    items = []
    for number, raw in enumerate(parsed, start=1):
        where = f"--from-file item {number}"
        if not isinstance(raw, dict):
            raise click.BadParameter("give a JSON object per run", param_hint=where)
        unknown = sorted(set(raw) - _ITEM_KEYS)
        if unknown:
            raise click.BadParameter(
                f"unknown key {unknown[0]!r}: use " + ", ".join(sorted(_ITEM_KEYS)),
                param_hint=where,
            )
        if "delaySeconds" in raw and "runAt" in raw:
            raise click.BadParameter("give delaySeconds or runAt, not both", param_hint=where)
        args = raw.get("args", default.args)
        if not isinstance(args, dict | None):
            raise click.BadParameter("args must be a JSON object", param_hint=where)
        delay = raw.get("delaySeconds", None if "runAt" in raw else default.delay_seconds)
        if delay is not None and (
            isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0
        ):
            raise click.BadParameter("delaySeconds must be a number >= 0", param_hint=where)
        run_at = default.run_at if "delaySeconds" not in raw else None
        if "runAt" in raw:
            run_at = _timestamp(str(raw["runAt"]))
            if run_at is None:
                raise click.BadParameter(
                    "runAt must be an RFC 3339 time with its offset, like 2026-12-01T09:00:00Z",
                    param_hint=where,
                )
        far = _too_far_ahead(
            delay if "delaySeconds" in raw else None, run_at if "runAt" in raw else None,
            "delaySeconds", "runAt",
        )  # fmt: skip
        if far:
            raise click.BadParameter(far, param_hint=where)
        priority = raw.get("priority", default.priority)
        if priority is not None and (
            isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 9
        ):
            raise click.BadParameter(
                "priority must be a whole number from 0 to 9", param_hint=where
            )
        for key in ("queue", "idempotencyKey"):
            if key in raw and not isinstance(raw[key], str):
                raise click.BadParameter(f"{key} must be a string", param_hint=where)
        items.append(
            runs.BatchItem(
                args=args,
                priority=priority,
                run_at=run_at,
                delay_seconds=float(delay or 0.0),
                idempotency_key=raw.get("idempotencyKey", default.idempotency_key),
                queue=raw.get("queue", default.queue),
            )
        )
    return items


def run_store_work(work: Coroutine[Any, Any, _T]) -> _T:
    """Run one command's database work; an unreachable PostgreSQL is one line and exit 4."""
    import asyncio

    from sundial.store import errors

    try:
        return asyncio.run(work)
    except errors.InvalidDsnError as error:
        raise click.BadParameter(str(error), param_hint="--dsn / SUNDIAL_DSN") from None
    except errors.HotQueueModeError as error:
        raise click.UsageError(str(error)) from None
    except errors.HotQueueUnavailableError as error:
        _refuse(
            f"{error}: check --hot-queue-url / SUNDIAL_HOT_QUEUE_URL and that Redis runs and"
            " accepts connections from here",
            EXIT_STORE_UNAVAILABLE,
        )
    except errors.StoreUnavailableError as error:
        _refuse(
            f"{error}: check --dsn / SUNDIAL_DSN (host, port, database, user, password) and"
            " that PostgreSQL runs and accepts connections from here",
            EXIT_STORE_UNAVAILABLE,
        )


@contextlib.asynccontextmanager
async def hot_queue_client(url: str | None) -> AsyncIterator[Any]:
    """The hot queue's Redis client for ``url``, closed after; None without a URL."""
    if not url:
        yield None
        return
    from sundial.store import hot_queue

    client = hot_queue.open_client(url)
    try:
        yield client
    finally:
        await client.aclose()


@contextlib.asynccontextmanager
async def connected(dsn: str) -> AsyncIterator[Pool]:
    from sundial.store import pool as store_pool

    # One connection, tried once first, so an unreachable database says why in seconds
    # instead of a pool timing out after 30.
    await store_pool.check_reachable(dsn)
    opened = await store_pool.open_pool(dsn, min_size=1, max_size=1, name="sundial-runs")
    try:
        yield opened
    finally:
        await opened.close()

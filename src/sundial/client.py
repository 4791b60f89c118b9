"""Sundial from Python, without Kubernetes: define a job, submit its runs, read and cancel them.

This module, ``sundial.job`` and ``sundial.JobContext`` are Sundial's Python API; everything
else is internal and may change between releases. A client talks to the run store (PostgreSQL)
directly. Defining a job writes a job definition, which needs the operator's login
(``sundial migrate --login``); submitting, reading and cancelling need only the runner's. A
login without the grant gets ``PermissionDeniedError`` naming what was refused::

    from sundial.client import Client

    async with Client("postgresql://sundial@db/sundial") as client:
        await client.define_job("billing", "charge", handler="billing.charge")
        submitted = await client.submit("billing/charge", args={"invoice": 42})
        run = await client.wait(submitted.run_id, within=60)
        print(run.state)  # completed

A job defined here is what a ScheduledJob's or a JobRun's job is to the runners: a handler
(registered with ``@sundial.job`` in the runners' ``--handlers`` modules), a queue, a priority,
a timeout and retry rules. It has no schedule (fire it from your own code, or apply a
ScheduledJob) and no Kubernetes object; defining it again with other settings changes the runs
submitted after. Its name may not be the name of a ScheduledJob in the same namespace.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any

import pydantic

from sundial import errors
from sundial.api import common
from sundial.scheduling import run_state
from sundial.store import errors as store_errors
from sundial.store import pool as store_pool
from sundial.store import runs, schedules
from sundial.store.runs import BatchItem, CancelResult, RunInfo, Submitted

__all__ = [
    "BatchItem",
    "CancelResult",
    "Client",
    "InvalidJobError",
    "JobNameTakenError",
    "RunInfo",
    "Submitted",
]

#: Jobs defined from Python are keyed by a uuid5 of their namespace and name in this namespace,
#: so defining one again updates it instead of adding a second definition.
_JOB_IDS = uuid.UUID("6f0d5a8e-2c61-4d7b-9b51-2a4c2f3d9e10")
#: Every definition from Python is generation 1: a redefinition always wins (the last writer).
_GENERATION = 1


class InvalidJobError(errors.SundialError, ValueError):
    """A job definition refused before anything was stored; the message says what to fix."""


class JobNameTakenError(InvalidJobError):
    """The name belongs to another active job in the namespace (a ScheduledJob's, say)."""


class Client:
    """A connection pool to the run store, and the calls an integrator needs.

    Use it as an async context manager, or call ``open`` and ``close`` yourself."""

    def __init__(
        self, dsn: str, *, max_connections: int = 4, hot_queue_url: str | None = None
    ) -> None:
        """``hot_queue_url``: the hot queue's Redis, where the database's hot queue is on, so
        that ``cancel`` asks a run Redis holds to stop as a running run is (without it the
        record ends such a run at once while its attempt still runs) and ``get`` shows it
        running."""
        self._dsn = dsn
        self._max_connections = max_connections
        self._hot_queue_url = hot_queue_url
        self._pool: store_pool.Pool | None = None
        self._hot: Any = None

    async def open(self) -> Client:
        if self._pool is None:
            self._pool = await store_pool.open_pool(
                self._dsn, min_size=1, max_size=self._max_connections
            )
        if self._hot_queue_url and self._hot is None:
            from sundial.store import hot_queue

            self._hot = hot_queue.open_client(self._hot_queue_url)
        return self

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._hot is not None:
            await self._hot.aclose()
            self._hot = None

    async def __aenter__(self) -> Client:
        return await self.open()

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def pool(self) -> store_pool.Pool:
        if self._pool is None:
            raise RuntimeError("the client is not open: use `async with Client(dsn)` or open()")
        return self._pool

    # -- jobs ------------------------------------------------------------------------------

    async def define_job(
        self,
        namespace: str,
        name: str,
        *,
        handler: str,
        execution_model: str | None = None,
        queue: str = "default",
        priority: int = 1,
        timeout_seconds: int | None = None,
        max_retries: int = 3,
        backoff_base_seconds: int = 1,
        backoff_cap_seconds: int = 300,
        dependency: str | None = None,
    ) -> uuid.UUID:
        """Create or update the job ``namespace/name``; its id.

        The fields mean what they mean in a ScheduledJob's spec (docs/reference.md) and are
        checked by the same rules: a bad one raises ``InvalidJobError`` naming the field, and
        nothing is stored. ``execution_model`` None: the handler's registration decides."""
        _check_name("namespace", namespace, common.DNS_LABEL_PATTERN, 63)
        _check_name("name", name, common.DNS_SUBDOMAIN_PATTERN, 253)
        try:
            spec = common.JobSpec.model_validate(
                {
                    "handler": {"name": handler, "execution_model": execution_model},
                    "queue": queue,
                    "priority": priority,
                    "timeout_seconds": timeout_seconds,
                    "retry": {
                        "max_retries": max_retries,
                        "backoff_base_seconds": backoff_base_seconds,
                        "backoff_cap_seconds": backoff_cap_seconds,
                    },
                    "dependency": dependency,
                }
            )
        except pydantic.ValidationError as error:
            raise InvalidJobError(_describe(namespace, name, error)) from None
        job_id = uuid.uuid5(_JOB_IDS, f"{namespace}/{name}")
        holder = await schedules.active_job_id(self.pool, namespace, name)
        if holder is not None and holder != job_id:
            raise JobNameTakenError(
                f"job {namespace}/{name}: the name belongs to another job in the namespace"
                " (a ScheduledJob's, or a JobRun's inline job): choose another name, or submit"
                f" runs of that job with submit('{namespace}/{name}')"
            )
        await schedules.upsert_job(
            self.pool,
            uid=job_id,
            namespace=namespace,
            name=name,
            generation=_GENERATION,
            spec=spec,
        )
        return job_id

    # -- runs ------------------------------------------------------------------------------

    async def submit(
        self,
        job: uuid.UUID | str,
        *,
        args: Mapping[str, Any] | None = None,
        priority: int | None = None,
        run_at: datetime | None = None,
        delay_seconds: float = 0.0,
        idempotency_key: str | None = None,
        depends_on: Sequence[int] = (),
    ) -> Submitted:
        """A run of ``job`` (its id, or ``"namespace/name"``). With an ``idempotency_key``, a
        second submission with the same key and args returns the first run (``created``
        False). ``run_at`` (aware) or ``delay_seconds`` hold it back, by 366 days at most;
        ``depends_on`` (run ids) holds it until they completed."""
        return await runs.submit(
            self.pool,
            job,
            args=args,
            priority=priority,
            run_at=run_at,
            delay_seconds=delay_seconds,
            idempotency_key=idempotency_key,
            depends_on=depends_on,
        )

    async def submit_many(
        self, job: uuid.UUID | str, items: Sequence[BatchItem | Mapping[str, Any]]
    ) -> list[Submitted]:
        """Many runs of ``job`` in one transaction, all or none: each item a ``BatchItem``, or
        just the run's args."""
        batch = [item if isinstance(item, BatchItem) else BatchItem(args=item) for item in items]
        return await runs.submit_many(self.pool, job, batch)

    async def get(self, run_id: int) -> RunInfo | None:
        """The run, live or archived; None if there is none with that id. Given the hot
        queue's Redis, a run a claimer holds there shows running."""
        return await runs.get(self.pool, run_id, hot=self._hot)

    async def cancel(self, run_id: int, *, reason: str = "cancelled on request") -> CancelResult:
        """Cancel the run: at once if it has not started, else on its worker's next heartbeat."""
        return await runs.cancel(self.pool, run_id, reason=reason, hot=self._hot)

    async def wait(
        self, run_id: int, *, within: float | None = None, poll_seconds: float = 0.2
    ) -> RunInfo:
        """The run once it finished (completed, failed, timed out, cancelled or dead-lettered).
        Raises ``TimeoutError`` when it has not after ``within`` seconds (None: wait for as long
        as it takes), ``NoSuchRunError`` if there is no such run."""
        deadline = None if within is None else time.monotonic() + within
        while True:
            run = await self.get(run_id)
            if run is None:
                raise store_errors.NoSuchRunError(run_id)
            if run.state in run_state.FINISHED:
                return run
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"run {run_id} is still {run.state} after {within:g} s")
            await asyncio.sleep(poll_seconds)


def _check_name(what: str, value: str, pattern: str, longest: int) -> None:
    if not isinstance(value, str) or not re.fullmatch(pattern, value) or len(value) > longest:
        raise InvalidJobError(
            f"{what} {value!r} is not a Kubernetes name: lower-case letters, digits and '-'"
            f"{' and .' if what == 'name' else ''}, starting and ending with a letter or digit,"
            f" at most {longest} characters"
        )


#: Where a field of the spec comes from among ``define_job``'s arguments.
_ARGUMENTS = {
    ("handler", "name"): "handler",
    ("handler", "execution_model"): "execution_model",
    ("retry", "max_retries"): "max_retries",
    ("retry", "backoff_base_seconds"): "backoff_base_seconds",
    ("retry", "backoff_cap_seconds"): "backoff_cap_seconds",
    ("retry",): "backoff_cap_seconds",  # the cap below the base: a rule of the pair
}


def _describe(namespace: str, name: str, error: pydantic.ValidationError) -> str:
    problems = []
    for problem in error.errors():
        location = tuple(str(part) for part in problem["loc"])
        argument = _ARGUMENTS.get(location) or ".".join(location) or "job"
        message = str(problem["msg"]).removeprefix("Value error, ")
        if message == common.RETRY_CAP_NOT_BELOW_BASE.message:
            message = "backoff_cap_seconds must be at least backoff_base_seconds"
        given = problem.get("input")
        shown = argument if isinstance(given, Mapping) else f"{argument}={given!r}"
        problems.append(f"{shown}: {message}")
    return f"job {namespace}/{name} refused, nothing stored: " + "; ".join(problems)

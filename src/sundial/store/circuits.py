"""Circuit breaker state shared between processes: which dependencies are open, and where.

A circuit breaker (``runner.breaker``) lives in one runner process and decides only for it.
What the rest of the installation needs to know is whether runs of a dependency wait because
some runner's breaker is open: the operator says so on the ScheduledJobs that name the
dependency (``Degraded=True``, reason ``CircuitOpen``), and ``sundial runs`` says why a run
waits. So each runner writes its breakers' states here (``publish``: on a transition and on a
slow refresh, never per job; ``runner.circuits``), and readers ask for the open ones
(``open_for``, ``open_for_jobs``, ``open_for_runs``).

Guarantees: a row is written only while its runner's announcement exists (``store.runners``)
and goes when that row goes (a clean stop, or an hour after a dead runner's announcement
expired); readers count only runners whose announcement has not expired, so a runner that died
with an open breaker stops counting within its announcement's ttl. "Open" here means not
closed: a half-open breaker lets only its probes through and every other run still waits, so it
counts too, and ``OpenCircuit`` says how many runners are in each state. Every call is one
statement, whatever the number of dependencies or jobs.

Schema: migration 0150 (``docs/adr/0035-circuit-state-shared.md``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sundial.store import queries
from sundial.store.pool import Pool

__all__ = [
    "STATES",
    "CircuitState",
    "OpenCircuit",
    "open_for",
    "open_for_jobs",
    "open_for_runs",
    "publish",
]

#: The states a breaker publishes, as ``runner.breaker.State`` spells them (the table's CHECK).
STATES = ("closed", "open", "half_open")


@dataclass(frozen=True)
class CircuitState:
    """One breaker's state as a runner publishes it: ``state`` since ``since`` (wall clock)."""

    dependency: str
    state: str
    since: datetime


@dataclass(frozen=True)
class OpenCircuit:
    """A dependency whose circuit is open or half-open on at least one live runner."""

    dependency: str
    open: int
    """Live runners whose breaker for it is open."""
    half_open: int
    """Live runners whose breaker for it is half-open (probing)."""
    runners: int
    """Live runners that have called the dependency at all (closed ones included)."""
    since: datetime
    """When the earliest of those breakers left the closed state."""
    workers: tuple[str, ...]
    """The worker ids of the runners where it is open or half-open, sorted."""

    def summary(self) -> str:
        """How many live runners see it open (half-open counted as open: runs still wait),
        e.g. ``open on 2 of 3 live runners``."""
        noun = "live runner" if self.runners == 1 else "live runners"
        return f"open on {self.open + self.half_open} of {self.runners} {noun}"


async def publish(pool: Pool, worker: str, states: Sequence[CircuitState]) -> set[str]:
    """Write ``worker``'s breaker states; returns the dependencies written.

    Nothing is written while ``worker`` has no announcement (``runners.announce``): the
    caller keeps the states and publishes them again later.
    """
    for circuit in states:
        if circuit.state not in STATES:
            raise ValueError(
                f"circuit state {circuit.state!r} of dependency {circuit.dependency!r} "
                f"is not one of {', '.join(STATES)}"
            )
    if not states:
        return set()
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("circuits_publish"),
            {
                "worker": worker,
                "dependencies": [c.dependency for c in states],
                "states": [c.state for c in states],
                "since": [c.since for c in states],
            },
        )
        rows = await cursor.fetchall()
    return {row[0] for row in rows}


async def open_for(pool: Pool, dependencies: Sequence[str] | None = None) -> dict[str, OpenCircuit]:
    """The open circuits by dependency: of ``dependencies``, or of every dependency if None."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("circuits_open"),
            {"dependencies": None if dependencies is None else list(dependencies)},
        )
        rows = await cursor.fetchall()
    return {row[0]: _open_circuit(row) for row in rows}


async def open_for_jobs(pool: Pool, job_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, OpenCircuit]:
    """The open circuit of each job (``job_definitions.dependency``, i.e. the manifest's
    ``spec.dependency``) whose dependency has one; jobs without one are left out."""
    if not job_ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("circuits_open_for_jobs"), {"job_ids": list(job_ids)}
        )
        rows = await cursor.fetchall()
    return {row[0]: _open_circuit(row[1:]) for row in rows}


async def open_for_runs(pool: Pool, run_ids: Sequence[int]) -> dict[int, OpenCircuit]:
    """The open circuit each unfinished run waits on, through its job's dependency (as
    ``open_for_jobs``); finished runs and runs of jobs without one are left out."""
    if not run_ids:
        return {}
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("circuits_open_for_runs"), {"run_ids": list(run_ids)}
        )
        rows = await cursor.fetchall()
    return {row[0]: _open_circuit(row[1:]) for row in rows}


def _open_circuit(row: Sequence[Any]) -> OpenCircuit:
    dependency, opened, half_open, runners, since, workers = row
    return OpenCircuit(
        dependency=dependency,
        open=opened,
        half_open=half_open,
        runners=runners,
        since=since,
        workers=tuple(workers or ()),
    )

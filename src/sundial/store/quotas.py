"""Quotas on the active runs of a namespace: configured, counted, consulted.

A namespace's quota bounds the runs it holds that have not ended (scheduled, blocked,
pending, running or waiting to retry), however they were made: a JobRun, ``runs.submit``, a
fire. PostgreSQL enforces it (migration 0270, docs/adr/0063-active-run-quotas.md): a trigger
counts every insert up and refuses the statement that would pass the quota, which leaves the
store as ``errors.QuotaExceededError``. Finishing a run never touches a quota, so a count can be
too high, never too low: the maintenance pass sets the counts to the truth, and an insert or a
fire that finds its namespace full counts it again before it refuses (at most once a second),
so ended runs free their room within a second, with or without a maintainer running.

The operator configures the quotas from its settings (``configure``): one per namespace
named, and a default for every other namespace, whose row is made the first time one of its
runs is inserted. Nothing configured means no quota and no cost beyond one probe of an empty
table per insert statement.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from dataclasses import dataclass

from sundial.store import queries
from sundial.store.pool import Connection, Pool

__all__ = [
    "DEFAULT",
    "Quota",
    "Room",
    "Usage",
    "configure",
    "count_active",
    "listed",
    "room",
    "usage",
]

#: The namespace column's value for the default quota (no namespace name holds ``*``).
DEFAULT = "*"


@dataclass(frozen=True)
class Quota:
    namespace: str
    max_active_runs: int
    #: As counted: every insert since the last maintenance pass added, no end subtracted.
    active_runs: int
    #: Configured by name (``False``: made from the default).
    explicit: bool


@dataclass(frozen=True)
class Usage:
    """A stored quota as ``sundial quotas`` shows it."""

    quota: Quota
    #: When the maintenance pass last set ``quota.active_runs`` to the truth (``None``: never).
    counted_at: datetime.datetime | None
    #: The namespace's runs that have not ended, counted now (``None`` for the default row).
    active_now: int | None


@dataclass(frozen=True)
class Room:
    """A namespace's quota and its active runs as counted."""

    quota: int
    active: int

    @property
    def room(self) -> int:
        """How many more runs fit."""
        return max(0, self.quota - self.active)

    def taking_one(self) -> Room:
        return Room(self.quota, self.active + 1)


async def configure(
    pool: Pool, *, per_namespace: Mapping[str, int], default: int | None = None
) -> None:
    """Make the stored quotas these: ``per_namespace`` by name, ``default`` for the rest (or
    none). Counts are kept for quotas that stay and set to the truth at the end."""
    for namespace, quota in [*per_namespace.items(), (DEFAULT, default or 0)]:
        if quota < 0:
            raise ValueError(f"the active-run quota of {namespace} is {quota}; use 0 or more")
    named = dict(sorted(per_namespace.items()))
    if default is not None:
        named[DEFAULT] = default
    async with pool.connection() as conn, conn.transaction():
        await conn.execute(queries.get("quotas_lock"))
        await conn.execute(queries.get("quotas_remove"), {"named": list(named), "default": default})
        if default is not None:
            await conn.execute(queries.get("quotas_set_default"), {"default": default})
        await conn.execute(
            queries.get("quotas_set"),
            {"namespaces": list(named), "quotas": list(named.values())},
        )
        await conn.execute(queries.get("quotas_count"))


async def count_active(pool: Pool) -> int:
    """Set every quota's count to its namespace's true number of active runs (the maintenance
    pass); how many quotas were counted."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("quotas_count"))
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def room(conn: Connection, wanted: Mapping[str, int]) -> dict[str, Room]:
    """The quota and count of each namespace of ``wanted`` (namespace: runs to add) that has
    a quota.

    A namespace whose count leaves less room than it wants is counted again first (unless it
    was within the last second), since ended runs are not counted down. Locks the quota rows
    for the rest of ``conn``'s transaction, so the room cannot shrink before the caller's
    insert: the trigger uses it to fire only what fits (``store.fires``).
    """
    namespaces = sorted(set(wanted))
    if not namespaces:
        return {}
    cursor = await conn.execute(queries.get("quotas_room"), {"namespaces": namespaces})
    found = {
        namespace: Room(int(quota), int(active))
        for namespace, quota, active in await cursor.fetchall()
    }
    short = sorted(ns for ns, held in found.items() if held.room < wanted[ns])
    if short:
        cursor = await conn.execute(queries.get("quotas_recount"), {"namespaces": short})
        for namespace, active in await cursor.fetchall():
            found[namespace] = Room(found[namespace].quota, int(active))
    return found


async def listed(pool: Pool) -> list[Quota]:
    """Every stored quota, the default first."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("quotas_list"))
        return [Quota(*row) for row in await cursor.fetchall()]


async def usage(pool: Pool) -> list[Usage]:
    """Every stored quota with its count and the namespace's active runs now, the default
    first. Counts the live runs of each quota's namespace: an operator's look, not a hot path."""
    async with pool.connection() as conn:
        cursor = await conn.execute(queries.get("quotas_usage"))
        return [
            Usage(Quota(namespace, quota, counted, explicit), counted_at, now)
            for namespace, quota, counted, explicit, counted_at, now in await cursor.fetchall()
        ]

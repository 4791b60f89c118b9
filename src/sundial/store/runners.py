"""Which runners are alive and what they serve, and the pending runs none of them can claim.

A runner claims only runs of the handlers it registers, under the models it registers them
with, so a run whose handler no live runner registers, or whose job names a model other than
the registration's, would wait in ``pending`` for ever without a word. To make such a run
say why, each runner announces itself here (``announce``: its queues and ``{handler: model}``,
valid for ``ttl_seconds``) and withdraws when it stops; ``mark_unclaimable`` compares the pending
runs with the live announcements and writes ``job_runs.unclaimable_reason``, which
``sundial runs`` and the JobRun's status show. The claim clears the reason.

Guarantees: a reason is written only for a run due for ``grace_seconds`` whose (queue,
handler, model) no live runner serves; a run waiting for a free slot is never blamed. The
check is safe from any number of processes at once (SKIP LOCKED) and writes only rows whose
reason changes. Runners of a version before migration 0082 do not announce themselves, so
while they run the check can blame runs they would claim; the claim clears it again.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from psycopg.types.json import Jsonb

from sundial.store import claims, errors, queries
from sundial.store.pool import Pool

__all__ = [
    "Unclaimable",
    "announce",
    "mark_unclaimable",
    "purge_expired",
    "require_login_serves",
    "withdraw",
]


@dataclass(frozen=True)
class Unclaimable:
    """A run whose reason changed: ``reason`` None means it is claimable again."""

    run_id: int
    job_id: uuid.UUID
    handler: str
    reason: str | None


async def announce(
    pool: Pool,
    worker: str,
    *,
    queues: Sequence[str],
    handlers: Mapping[str, str],
    ttl_seconds: float,
    namespaces: Sequence[str] | None = None,
) -> None:
    """Say that ``worker`` serves ``handlers`` (name -> model) on ``queues`` for a while, for
    the jobs of ``namespaces`` (None: every namespace)."""
    async with pool.connection() as conn:
        await conn.execute(
            queries.get("runner_announce"),
            {
                "worker": worker,
                "queues": list(queues),
                "handlers": Jsonb(dict(handlers)),
                "ttl_seconds": float(ttl_seconds),
                "namespaces": None if namespaces is None else list(namespaces),
            },
        )


async def require_login_serves(pool: Pool, namespaces: Sequence[str] | None) -> None:
    """Return if the pool's database login may claim runs of ``namespaces`` (None: every
    namespace); raise ``LoginNamespacesError`` saying what to change otherwise.

    A login kept to namespaces (``sundial migrate --login-namespaces``) sees no other run, so a
    runner told to serve more would wait on runs it can never see, without a word."""
    async with pool.connection() as conn:
        row = await (await conn.execute(queries.get("login_namespaces"))).fetchone()
    kept = None if row is None or row[0] is None else sorted(row[0])
    login = "?" if row is None else row[1]
    if kept is None:
        return
    if namespaces is None:
        raise errors.LoginNamespacesError(
            f"the database login {login} is kept to the namespaces {', '.join(kept) or '(none)'}"
            f" but this process serves every namespace: start it with --namespace"
            f" {','.join(kept) or 'NAMESPACE'}, or lift the login's list with"
            f" `sundial migrate --login-namespaces {login}=*`"
        )
    beyond = sorted(set(namespaces) - set(kept))
    if beyond:
        raise errors.LoginNamespacesError(
            f"the database login {login} is kept to the namespaces {', '.join(kept) or '(none)'},"
            f" not {', '.join(beyond)}: serve only those, or add them with"
            f" `sundial migrate --login-namespaces {login}={','.join(sorted({*kept, *beyond}))}`"
        )


async def withdraw(pool: Pool, worker: str) -> None:
    """Take ``worker``'s announcement away (and announcements long expired)."""
    async with pool.connection() as conn:
        await conn.execute(queries.get("runner_withdraw"), {"worker": worker})


async def purge_expired(
    pool: Pool, *, older_than_seconds: float = 3600.0, limit: int = 1000
) -> int:
    """Delete up to ``limit`` rows of runners whose announcement expired more than
    ``older_than_seconds`` ago, with their ``circuits`` rows (the foreign key cascades); return
    how many. A runner killed without withdrawing never deletes its own row, and ``withdraw``
    purges the long expired only when another runner stops cleanly, so the scheduler's
    maintainer calls this. A purged runner that comes back announces itself again."""
    if older_than_seconds < 0 or limit < 1:
        raise ValueError(
            f"older_than_seconds must be >= 0 and limit >= 1, got {older_than_seconds} and {limit}"
        )
    async with pool.connection() as conn:
        cursor = await conn.execute(
            queries.get("runner_purge_expired"),
            {"older_than_seconds": float(older_than_seconds), "limit": limit},
        )
        return cursor.rowcount


async def mark_unclaimable(
    pool: Pool, *, grace_seconds: float = 5.0, limit: int = 1000, scan: int = 2000
) -> list[Unclaimable]:
    """Write (or clear) the reason of pending runs no live runner can claim; at most ``limit``.

    Reads the ``scan`` runs without a reason that are due longest, in the claim's order, and
    the runs that have one; never the whole backlog, which at twice the design peak held
    250,000 runs and took 5.2 s to group (migration 0190). A run nobody can claim stays in the
    claim's order while the runs before it are claimed, so it is blamed once fewer than
    ``scan`` unblamed runs are due before it."""
    async with pool.connection() as conn, conn.transaction():
        # The planner's guess for the live announcements (the runners table unnested twice)
        # is in the hundreds of thousands of rows, which puts the statement's cost past
        # jit_above_cost: compiling it took 0.7 s of a call that runs in milliseconds.
        await conn.execute("SET LOCAL jit = off")
        # It reads the queue's head as the claim does, and a stale estimate misleads it alike.
        await conn.execute(claims.INDEX_ORDER_ONLY)
        cursor = await conn.execute(
            queries.get("mark_unclaimable_runs"),
            {"grace_seconds": float(grace_seconds), "limit": limit, "scan": scan},
        )
        rows = await cursor.fetchall()
    return [Unclaimable(*row) for row in rows]

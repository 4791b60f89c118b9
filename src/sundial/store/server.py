"""The PostgreSQL server settings the run store needs beyond the defaults, and a check of them.

The hot table turns over fast: at the design peak (6,000 runs/s) every run leaves dead row
versions and dead index entries behind it (submitted, claimed, finished), which the claim,
the finish and the reaper walk until a vacuum removes them. The table's own autovacuum
thresholds are low (migration 0002), but PostgreSQL's autovacuum launcher starts a worker for
a database at most once per ``autovacuum_naptime``, one minute by default: however low the
thresholds, the table is vacuumed once a minute at most. At 6,000 runs/s for a minute that
left 417,000-612,000 dead tuples, and in the runs that broke on a 2-CPU machine PostgreSQL's
CPU per job was 176-225 µs; with a 10 s naptime six vacuums kept 28,000-113,000, PostgreSQL
took 65-98 µs per job and every run held (docs/adr/0042-vacuum-the-hot-table-every-ten-seconds.md).

``RECOMMENDED`` is what the local throwaway server (``sundial.localdev.postgres``) and the
chart's bundled PostgreSQL set; a managed PostgreSQL needs it set by whoever runs it
(docs/operations.md, "PostgreSQL settings"). ``problems`` says which of them a server differs
from, so the maintainer can say so in its log.
"""

from __future__ import annotations

from sundial.store.pool import Pool

__all__ = ["RECOMMENDED", "naptime_problem", "problems"]

#: Setting -> value, as ``postgres -c`` and postgresql.conf take them.
RECOMMENDED = {"autovacuum_naptime": "10s"}

#: The longest naptime that still keeps up, in seconds (the value of ``RECOMMENDED``).
_NAPTIME_SECONDS = 10


def naptime_problem(seconds: float, autovacuum: bool) -> str | None:
    """What is wrong with these autovacuum settings for the hot table, or None."""
    if not autovacuum:
        return (
            "autovacuum is off: job_runs is never vacuumed, and every claim and finish walks "
            "more dead rows; set autovacuum = on (docs/operations.md, PostgreSQL settings)"
        )
    if seconds > _NAPTIME_SECONDS:
        return (
            f"autovacuum_naptime is {seconds:g}s: job_runs is vacuumed at most that often, "
            f"too seldom above about 1,000 runs/s; set autovacuum_naptime = "
            f"{RECOMMENDED['autovacuum_naptime']} (docs/operations.md, PostgreSQL settings)"
        )
    return None


async def problems(pool: Pool) -> list[str]:
    """Why this server's settings are not what the run store needs (empty: they are)."""
    async with pool.connection() as conn:
        cursor = await conn.execute(
            "SELECT current_setting('autovacuum_naptime')::interval,"
            " current_setting('autovacuum')::boolean"
        )
        row = await cursor.fetchone()
    assert row is not None
    naptime, autovacuum = row
    problem = naptime_problem(naptime.total_seconds(), bool(autovacuum))
    return [] if problem is None else [problem]

"""The hot queue's reconciler: what the record says is pending, Redis must hold.

The outbox delivers every run that becomes pending, at least once; what it cannot cover is a
Redis that forgets after taking them: a restart without persistence, a failover that lost the
last acknowledged writes, a flush. The reconciler walks the record's pending runs a page at a
time and delivers again each one Redis holds in no set (neither due nor leased); the enqueue
is idempotent and ignores a delivery older than an attempt Redis handed out since, so a run
claimed and released while the page was read is not made due again.

Not yet run by any process (docs/adr/0024-hot-queue-move.md lists the slices).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sundial.store import queries
from sundial.store.hot_queue import DueRun, HotQueue
from sundial.store.pool import Pool

__all__ = ["reconcile"]


async def reconcile(pool: Pool, client: Any, *, page: int = 1000) -> int:
    """Deliver again every pending run of the record that Redis holds in no set; return how
    many were made due again."""
    delivered, after = 0, 0
    while True:
        async with pool.connection() as conn:
            cursor = await conn.execute(
                queries.get("hot_queue_pending_page"), {"after": after, "limit": page}
            )
            rows = await cursor.fetchall()
        if not rows:
            return delivered
        after = rows[-1][0]
        by_queue: dict[str, list[DueRun]] = defaultdict(list)
        for run_id, queue, namespace, handler, model, dispatch_key, attempt in rows:
            by_queue[queue].append(
                DueRun.from_record(run_id, namespace, handler, model, dispatch_key, attempt)
            )
        for queue, runs in by_queue.items():
            hot_queue = HotQueue(client, queue)
            missing = await hot_queue.held_nowhere(runs)
            if missing:
                delivered += await hot_queue.enqueue(missing)

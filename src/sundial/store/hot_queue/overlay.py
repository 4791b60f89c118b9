"""What readers show of the runs the hot queue holds: running, under Redis's attempt.

On the hot queue a claim writes nothing to PostgreSQL (docs/adr/0024-hot-queue-move.md): the
record says pending until the finish. A reader given the Redis (``sundial runs``, the history
API, the operator's JobRun status) asks it which of the pending runs it shows a claimer holds,
and shows those running, with the attempt Redis handed out and the lease, as PostgreSQL alone
would. One pipelined round trip per read. A Redis that cannot be reached leaves the record as
it is, with a warning: a reader never fails for the hot queue's sake.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import functools
import hashlib
import logging
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from sundial.scheduling.run_state import RunState

log = logging.getLogger(__name__)

__all__ = [
    "HELD_IDS_SECONDS",
    "Holding",
    "held_anywhere",
    "held_ids",
    "holdings",
    "moves",
    "overlay",
    "unanswered",
]

#: The longest ``held_ids`` waits for Redis before it shows the record as it is.
HELD_IDS_SECONDS = 2.0

Row = TypeVar("Row")

#: How many reads in this process Redis left unanswered (``unanswered``).
_unanswered = 0


def unanswered() -> int:
    """How many reads in this process showed runs as recorded because Redis did not answer:
    a reader that skips what did not change (the status mirror) counts this among its
    inputs, or what such a read showed would stay until something else changed."""
    return _unanswered


def _not_answered(error: BaseException) -> None:
    global _unanswered
    _unanswered += 1
    log.warning("the hot queue's Redis did not answer; runs shown as recorded: %r", error)


async def moves(client: Any, queues: Iterable[str]) -> tuple[str, ...] | None:
    """For each of ``queues``, a text that changes whenever a lease there begins or ends, or
    the server is another (restarted, promoted): equal texts mean every held run a reader
    showed is still held under the same attempt. None when Redis did not answer."""
    from redis import exceptions as redis_errors

    from sundial.store.hot_queue import key_prefix, script_text

    names = sorted(set(queues))
    if client is None or not names:
        return ()
    text = script_text("moves")

    async def each(call: str, script: str) -> list[Any]:
        pipeline = client.pipeline(transaction=False)
        for name in names:
            getattr(pipeline, call)(script, 1, key_prefix(name))
        return list(await pipeline.execute())

    try:
        try:
            # Once a second per queue from the status mirror: the script's hash, not its text.
            replies = await each("evalsha", _sha1(text))
        except redis_errors.NoScriptError:  # a new or restarted server: EVAL caches it
            replies = await each("eval", text)
    except (redis_errors.RedisError, OSError, TimeoutError) as error:
        _not_answered(error)
        return None
    return tuple(
        f"{name}={reply.decode() if isinstance(reply, bytes) else reply}"
        for name, reply in zip(names, replies, strict=True)
    )


@functools.cache
def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).hexdigest()


@dataclasses.dataclass(frozen=True)
class Holding:
    """A claim Redis holds: its token, when it began and when its lease ends (Redis's clock;
    ``started_at`` None for a claim made by a build that did not record it)."""

    epoch: int
    attempt: int
    lease_until: datetime.datetime
    started_at: datetime.datetime | None = None


async def holdings(client: Any, runs: Iterable[tuple[int, str]]) -> dict[int, Holding]:
    """Of ``runs`` ((id, queue) pairs, pending in the record), those a claimer holds now."""
    pairs = list(runs)
    if client is None or not pairs:
        return {}
    from redis import exceptions as redis_errors

    from sundial.store.hot_queue import key_prefix, member

    pipeline = client.pipeline(transaction=False)
    for run_id, queue in pairs:
        prefix = key_prefix(queue)
        pipeline.zscore(f"{prefix}:leases", member(run_id))
        pipeline.hget(f"{prefix}:holders", member(run_id))
        pipeline.hget(f"{prefix}:started", member(run_id))
    try:
        replies = await pipeline.execute()
    except (redis_errors.RedisError, OSError) as error:
        _not_answered(error)
        return {}
    held: dict[int, Holding] = {}
    for i, (run_id, _queue) in enumerate(pairs):
        until, holder, started = replies[3 * i : 3 * i + 3]
        if until is None or holder is None:
            continue
        token = holder.decode() if isinstance(holder, bytes) else holder
        epoch, _, attempt = token.partition(":")
        held[run_id] = Holding(
            int(epoch),
            int(attempt),
            _moment(until),
            None if started is None else _moment(started),
        )
    return held


async def held_ids(client: Any, queues: Iterable[str]) -> set[int]:
    """The runs a claimer holds now in any of ``queues`` (their leases), in one pipelined round
    trip; none, with a warning, when Redis does not answer."""
    names = list(queues)
    if client is None or not names:
        return set()
    from redis import exceptions as redis_errors

    from sundial.store.hot_queue import key_prefix

    pipeline = client.pipeline(transaction=False)
    for queue in names:
        pipeline.zrange(f"{key_prefix(queue)}:leases", 0, -1)
    try:
        # Bounded well below the client's socket timeout: a reader, or the maintainer's
        # monitor pass, must not wait out a connection a Redis failover left dead (the
        # maintainer's recovery work waits behind its monitor).
        async with asyncio.timeout(HELD_IDS_SECONDS):
            replies = await pipeline.execute()
    except (redis_errors.RedisError, OSError, TimeoutError) as error:
        _not_answered(error)
        return set()
    return {int(run_id) for members in replies for run_id in members}


async def held_anywhere(conn: Any, client: Any) -> set[int]:
    """The runs a claimer holds now in any queue a job names (``held_ids`` over the queues
    ``conn`` reads from the record); none, with a warning, when Redis does not answer."""
    if client is None:
        return set()
    from sundial.store import queries

    cursor = await conn.execute(queries.get("hot_queue_queues"))
    return await held_ids(client, [row[0] for row in await cursor.fetchall()])


def _moment(milliseconds: Any) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(float(milliseconds) / 1000, datetime.UTC)


async def overlay(client: Any, rows: Sequence[Row]) -> list[Row]:
    """``rows`` (dataclasses with ``id``, ``state``, ``attempt`` and ``queue``) with each
    pending one a claimer holds shown running under the attempt Redis handed out, since the
    claim (``started_at``), with its ``lease_until`` where the row has one."""
    if client is None:
        return list(rows)
    named = [
        (row.id, row.queue)  # type: ignore[attr-defined]
        for row in rows
        if getattr(row, "state", None) == RunState.PENDING and getattr(row, "queue", None)
    ]
    held = await holdings(client, named)
    if not held:
        return list(rows)
    shown = []
    for row in rows:
        holding = held.get(row.id)  # type: ignore[attr-defined]  # only pending ids were asked
        if holding is None:
            shown.append(row)
            continue
        changes: dict[str, Any] = {"state": RunState.RUNNING, "attempt": holding.attempt}
        names = {f.name for f in dataclasses.fields(row)}  # type: ignore[arg-type]
        if "lease_until" in names:
            changes["lease_until"] = holding.lease_until
        if "started_at" in names and holding.started_at is not None:
            changes["started_at"] = holding.started_at
        shown.append(dataclasses.replace(row, **changes))  # type: ignore[type-var]
    return shown

"""The hot queue on Redis: which runs are due, who holds which, until when.

PostgreSQL stays the record (docs/adr/0024-hot-queue-move.md); this module is the Redis half
of the hot path when a deployment moves it out of PostgreSQL: due runs in one sorted set per
(queue, namespace) scored by their dispatch key, leases in one sorted set per queue scored by
when they end, each run's attempt count and dispatch key (a run given back without a delay
takes its place again, as PostgreSQL's release leaves its key), and when each held attempt
began (for the readers, ``overlay``). Every step is one Lua script (the ``.lua`` files
beside this one, each prefixed with ``common.lua``), so each is atomic on the server.

The fencing token of an attempt is ``(epoch, attempt)``. The attempt comes from Redis; the
epoch from PostgreSQL, set for one Redis server as it is (its run id and replication id): a
restarted server has a new run id, a promoted replica a new replication id (and so does a
primary when its first replica attaches), and the claim refuses to hand out attempts
(``EpochChangedError``) until a new epoch is set, so an attempt number the old primary handed
out and lost is never handed out again under the same epoch.

A runner started with a Redis URL claims, heartbeats, finishes and gives back runs through
``dispatch.HotDispatch``; the maintainer runs the relay (``outbox``), the reconciler and the
lease expiry (``reconciler``). Pods are still claimed from PostgreSQL: runs of the ``pod``
model never enter Redis (docs/adr/0024-hot-queue-move.md).

Times (leases) are Redis's own clock (``TIME`` inside the scripts), one clock for every
claimer. All of a queue's keys share the hash tag ``{sundial:<queue>}``: one Cluster slot.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from sundial.store.errors import EpochChangedError, HotQueueModeError, HotQueueUnavailableError
from sundial.store.pool import Pool

__all__ = [
    "Claim",
    "DueRun",
    "EpochChangedError",
    "HotQueue",
    "Token",
    "key_prefix",
    "member",
    "open_client",
    "redis_calls",
    "script_text",
]

_SCRIPTS = (
    "identity",
    "epoch",
    "set_epoch",
    "enqueue",
    "claim",
    "heartbeat",
    "release",
    "requeue",
    "expire",
    "forget",
    "cancel",
    "moves",
)


@functools.cache
def script_text(name: str) -> str:
    """The whole text of the script ``name`` (``common.lua`` first), read once."""
    folder = resources.files("sundial.store").joinpath("hot_queue")
    common = folder.joinpath("common.lua").read_text("utf-8")
    return common + "\n" + folder.joinpath(f"{name}.lua").read_text("utf-8")


@dataclass(frozen=True, order=True)
class Token:
    """An attempt's fencing token: a later epoch wins, then a later attempt."""

    epoch: int
    attempt: int

    def __str__(self) -> str:
        return f"{self.epoch}:{self.attempt}"


@dataclass(frozen=True)
class DueRun:
    """A run to make due: its id, dispatch key (ms), namespace, handler and model, and the
    last attempt the record had counted when the run became pending (``attempt``: a delivery
    older than a claim Redis made since changes nothing)."""

    id: int
    dispatch_ms: int
    namespace: str
    handler: str
    model: str
    attempt: int = 0

    @classmethod
    def from_record(
        cls,
        run_id: int,
        namespace: str | None,
        handler: str,
        model: str | None,
        dispatch_key: float,
        attempt: int,
    ) -> DueRun:
        """From a ``job_runs`` row: its dispatch key in seconds, a run of no namespace under
        ``""``, no model named as ``""`` (the handler's registered model)."""
        return cls(
            run_id, round(dispatch_key * 1000), namespace or "", handler, model or "", attempt
        )


def key_prefix(queue: str) -> str:
    """The prefix of every key of ``queue``: ``{sundial:<queue>}``, the hash tag that keeps a
    queue's keys in one Redis Cluster slot (``common.lua`` derives the rest from it)."""
    return "{sundial:" + queue + "}"


def member(run_id: int) -> str:
    """A run id as Redis holds it (sorted-set member, hash field): zero-padded to a bigint's 19
    digits. Redis orders the members of one score by their bytes, and runs submitted in one
    transaction share one dispatch key: padded, they come out first in, first out (id order),
    as PostgreSQL's claim takes them; unpadded, run 10 would come before run 9."""
    return f"{run_id:019d}"


@dataclass(frozen=True)
class Claim:
    """One claimed run and the token its attempt runs under."""

    id: int
    token: Token


class HotQueue:
    """One queue's hot state on one Redis (``client``: a ``redis.asyncio.Redis``)."""

    def __init__(self, client: Any, queue: str) -> None:
        self._client = client
        self.queue = queue
        self._prefix = key_prefix(queue)
        self._scripts = {name: client.register_script(script_text(name)) for name in _SCRIPTS}

    async def _call(self, name: str, *args: object) -> Any:
        return await self._scripts[name](keys=[self._prefix], args=list(args))

    async def set_epoch(self, epoch: int) -> int:
        """Set ``epoch`` (issued by PostgreSQL) for this server unless one is set for its
        replication id already; return the epoch in force (another process's may have won)."""
        return int(await self._call("set_epoch", epoch))

    async def server_identity(self) -> str:
        """Who the server holding this queue is (its run id and replication id): it changes
        when the server restarts or a replica is promoted, i.e. when it may have forgotten."""
        found = await self._call("identity")
        return found.decode() if isinstance(found, bytes) else str(found)

    async def epoch(self) -> int | None:
        """The epoch in force on this server, ``None`` when it has none for the server it now
        is (a failover or a restart since it was set)."""
        found = await self._call("epoch")
        return int(found) if found else None

    async def attempts(self, run_ids: Sequence[int]) -> list[int]:
        """The last attempt handed out for each run (0: none it remembers)."""
        if not run_ids:
            return []
        counts = await self._client.hmget(
            f"{self._prefix}:attempts", [member(run_id) for run_id in run_ids]
        )
        return [int(count or 0) for count in counts]

    async def renew_epoch(self, pool: Pool) -> int:
        """After ``EpochChangedError``: take the next epoch from PostgreSQL (migration 0350)
        and set it for this server; return the epoch in force, another process's when it set
        one first (the epoch taken here is then never used, which is harmless)."""
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "INSERT INTO hot_queue_epochs (queue) VALUES (%s) RETURNING epoch", (self.queue,)
            )
            row = await cursor.fetchone()
        assert row is not None
        return await self.set_epoch(int(row[0]))

    async def enqueue(self, runs: Iterable[DueRun]) -> int:
        """Make ``runs`` due (idempotent by run id; a held run, or one claimed past the
        delivery's ``attempt``, is left alone); how many were not due before."""
        lines = "\n".join(
            f"{member(run.id)}\t{run.dispatch_ms}\t{run.namespace}\t{run.handler}\t{run.model}"
            f"\t{run.attempt}"
            for run in runs
        )
        return int(await self._call("enqueue", lines)) if lines else 0

    async def held_nowhere(self, runs: Sequence[DueRun]) -> list[DueRun]:
        """Those of ``runs`` neither due nor leased here (one pipelined round trip): what the
        reconciler delivers again."""
        pipeline = self._client.pipeline(transaction=False)
        for run in runs:
            pipeline.zscore(f"{self._prefix}:due:{run.namespace}", member(run.id))
            pipeline.zscore(f"{self._prefix}:leases", member(run.id))
        scores = await pipeline.execute()
        return [
            run for i, run in enumerate(runs) if scores[2 * i] is None and scores[2 * i + 1] is None
        ]

    async def claim(
        self,
        epoch: int,
        *,
        lease_ms: int,
        limit: int,
        handlers: Iterable[tuple[str, str]],
        namespaces: Sequence[str] | None = None,
        excluded_namespaces: Sequence[str] | None = None,
        weights: Mapping[str, float] | None = None,
        held: Mapping[str, int] | None = None,
        reserved: int = 0,
    ) -> list[Claim]:
        """Up to ``limit`` due runs of the (handler, model) pairs given, dealt fairly over the
        namespaces (``namespaces``: only those; never ``excluded_namespaces``), each leased for
        ``lease_ms``. ``weights``, ``held`` and ``reserved`` mean what they mean to the
        PostgreSQL claim (``sundial.store.claims.claim``). Raises ``EpochChangedError`` when
        ``epoch`` is not this server's."""
        if limit <= 0 or (namespaces is not None and not namespaces):
            return []
        if not 0 <= reserved <= limit:
            raise ValueError(
                f"reserved slots must be between 0 and the limit {limit}, got {reserved}"
            )
        if weights and not all(0 < weight < math.inf for weight in weights.values()):
            raise ValueError(f"namespace weights must be numbers above 0, got {dict(weights)}")
        reply = await self._call(
            "claim",
            epoch,
            lease_ms,
            limit,
            "\n".join(f"{handler}\t{model}" for handler, model in handlers),
            "\n".join(namespaces) if namespaces is not None else "",
            "\n".join(f"{name}\t{weight!r}" for name, weight in (weights or {}).items()),
            "\n".join(f"{name}\t{int(count)}" for name, count in (held or {}).items()),
            reserved,
            "\n".join(excluded_namespaces or ()),
        )
        status = _text(reply[0])
        if status == "EPOCH":
            raise EpochChangedError(str(epoch), _text(reply[1]) if reply[1] else None)
        in_force = int(reply[1])
        return [
            Claim(int(reply[i]), Token(in_force, int(reply[i + 1])))
            for i in range(2, len(reply), 2)
        ]

    async def heartbeat(self, lease_ms: int, held: Sequence[Claim]) -> list[bool]:
        """Extend each held lease; ``False`` where that attempt lost its run."""
        if not held:
            return []
        lines = "\n".join(f"{member(claim.id)}\t{claim.token}" for claim in held)
        return [bool(flag) for flag in await self._call("heartbeat", lease_ms, lines)]

    async def release(self, claims: Sequence[Claim]) -> list[bool]:
        """End each lease its claim still holds (then write those finishes to PostgreSQL);
        ``False`` for a stale attempt, whose finish must not be written."""
        if not claims:
            return []
        lines = "\n".join(f"{member(claim.id)}\t{claim.token}" for claim in claims)
        return [bool(flag) for flag in await self._call("release", lines)]

    async def requeue(self, claims: Sequence[tuple[Claim, int]]) -> list[bool]:
        """Give back each (claim, delay in ms) whose lease it still holds: due again after the
        delay, no end recorded (a runner shutting down); ``False`` for a stale attempt."""
        if not claims:
            return []
        lines = "\n".join(
            f"{member(claim.id)}\t{claim.token}\t{max(0, int(delay_ms))}"
            for claim, delay_ms in claims
        )
        return [bool(flag) for flag in await self._call("requeue", lines)]

    async def expire(self, limit: int) -> list[tuple[int, Token | None]]:
        """Take back up to ``limit`` ended leases: (run id, the token that lost it)."""
        reply = await self._call("expire", limit)
        lost = []
        for i in range(0, len(reply), 2):
            token = _text(reply[i + 1])
            epoch, _, attempt = token.partition(":")
            lost.append((int(reply[i]), Token(int(epoch), int(attempt)) if attempt else None))
        return lost

    async def cancel(self, run_ids: Sequence[int]) -> list[str]:
        """Settle where each run being cancelled is, atomically against claims: ``"due"``
        (taken out of the due set here: no claim can hand it out), ``"held"`` (a lease holds
        it: its attempt runs, and is asked to stop as a running run's is) or ``"none"``."""
        if not run_ids:
            return []
        reply = await self._call("cancel", "\n".join(member(run_id) for run_id in run_ids))
        return [_text(word) for word in reply]

    async def forget(self, run_ids: Iterable[int]) -> int:
        """Drop the attempt counts of runs whose finish PostgreSQL recorded. Only once no
        relay can still deliver their pending: a delivery read before the finish would make a
        forgotten run due again (the relay's transaction is bounded; forget runs finished
        minutes ago, not now)."""
        ids = "\n".join(member(run_id) for run_id in run_ids)
        return int(await self._call("forget", ids)) if ids else 0


def open_client(url: str) -> Any:
    """A ``redis.asyncio.Redis`` for ``url`` (``redis://``, ``rediss://``, ``unix://``), with
    timeouts, so that a Redis that stopped answering is an error the caller retries, not a
    hang; ``HotQueueModeError`` when the ``redis`` extra is not installed."""
    try:
        from redis import asyncio as aioredis
    except ImportError as error:  # pragma: no cover - the images install the extra
        raise HotQueueModeError(
            "a Redis URL was given but the redis package is missing: install sundial[redis]"
        ) from error
    return aioredis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)


@contextlib.contextmanager
def redis_calls() -> Iterator[None]:
    """Redis's transient failures as the store's (``HotQueueUnavailableError``, a
    ``StoreUnavailableError``): retried by the caller as PostgreSQL's outages are."""
    from redis import exceptions as redis_errors

    try:
        yield
    except (redis_errors.ConnectionError, redis_errors.TimeoutError) as error:
        raise HotQueueUnavailableError(f"the hot queue's Redis: {error}") from error


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)

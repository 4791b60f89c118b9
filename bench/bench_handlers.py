"""The handlers the benchmarks run in `sundial runner` (``--handlers bench_handlers`` with bench/
on PYTHONPATH).

``bench.sink`` is the fault benchmark's witness: it writes (run id, attempt, fencing token,
idempotency key) into a sink table with an upsert fenced by the token, the way a job guards its
own side effects with ``ctx.fencing_token``: a write from an attempt older than one already
written is rejected (on the hot queue two epochs can hand out the same attempt number, never
the same token). Every write is also logged, accepted or not, so bench/faults.py can count stale
writes and runs executed more than once. Its connection string comes from SUNDIAL_BENCH_SINK.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

import psycopg

import sundial

SINK_SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_sink (
    idempotency_key text PRIMARY KEY,
    run_id bigint NOT NULL,
    attempt integer NOT NULL,
    token bigint NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS bench_sink_log (
    seq bigserial PRIMARY KEY,
    idempotency_key text NOT NULL,
    run_id bigint NOT NULL,
    attempt integer NOT NULL,
    token bigint NOT NULL,
    accepted boolean NOT NULL,
    at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS bench_outage (
    dependency text PRIMARY KEY,
    until timestamptz NOT NULL
);
"""

# The fenced write: only a token newer than the stored one replaces it.
_FENCED_UPSERT = """
WITH written AS (
    INSERT INTO bench_sink AS s (idempotency_key, run_id, attempt, token)
    VALUES (%(key)s, %(run_id)s, %(attempt)s, %(token)s)
    ON CONFLICT (idempotency_key) DO UPDATE
        SET attempt = excluded.attempt, token = excluded.token, run_id = excluded.run_id,
            written_at = clock_timestamp()
        WHERE s.token < excluded.token
    RETURNING 1
)
INSERT INTO bench_sink_log (idempotency_key, run_id, attempt, token, accepted)
SELECT %(key)s, %(run_id)s, %(attempt)s, %(token)s, EXISTS (SELECT 1 FROM written)
RETURNING accepted
"""


def _sink_params(ctx: sundial.JobContext) -> dict[str, Any]:
    return {
        "key": ctx.idempotency_key,
        "run_id": int(ctx.run_id),
        "attempt": ctx.attempt,
        "token": ctx.fencing_token,
    }


_connection: psycopg.AsyncConnection[Any] | None = None
_lock: asyncio.Lock | None = None


async def _sink_execute(query: str, params: dict[str, Any]) -> Any:
    global _connection, _lock
    if _lock is None:
        _lock = asyncio.Lock()
    async with _lock:
        for attempt in range(60):
            try:
                if _connection is None or _connection.closed:
                    _connection = await psycopg.AsyncConnection.connect(
                        os.environ["SUNDIAL_BENCH_SINK"], autocommit=True
                    )
                cursor = await _connection.execute(query, params)  # type: ignore[arg-type]
                return await cursor.fetchone()
            except psycopg.OperationalError:
                _connection = None
                if attempt == 59:
                    raise
                await asyncio.sleep(0.5)
    return None


@sundial.job("bench.noop")
async def noop(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    return None


@sundial.job("bench.noop_dependency", dependency="bench-api")
async def noop_dependency(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """``bench.noop`` with a declared dependency: each job also passes its circuit breaker."""
    return None


@sundial.job("bench.sleep")
async def sleep(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """The design workload's job: a 2 s wait (``seconds`` overrides it). With ``jitter`` (a
    fraction) the wait is drawn uniformly within that share of ``seconds`` either side, as real
    jobs' lengths vary: equal lengths end together, so slots free in bursts."""
    seconds = float(args.get("seconds", 2.0))
    jitter = float(args.get("jitter", 0.0))
    if jitter:
        seconds *= random.uniform(1.0 - jitter, 1.0 + jitter)
    await asyncio.sleep(seconds)


@sundial.job("bench.sink")
async def sink(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Work for ``seconds``, then write the fenced side effect.

    With ``shielded`` the write survives the runner cancelling the attempt (a call already on
    the wire to a downstream), so a paused-and-resumed attempt's write does reach the sink
    and the fence, not the runner, has to reject it.
    """
    await asyncio.sleep(float(args.get("seconds", 0.2)))
    params = _sink_params(ctx)
    if args.get("shielded"):
        await asyncio.shield(_sink_execute(_FENCED_UPSERT, params))
    else:
        await _sink_execute(_FENCED_UPSERT, params)


@sundial.job("bench.poison")
async def poison(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    raise RuntimeError("poison: this job always fails")


@sundial.job("bench.downstream", dependency="bench-downstream")
async def downstream(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Fails while bench_outage says the downstream is out; then writes the sink."""
    row = await _sink_execute(
        "SELECT until > clock_timestamp() FROM bench_outage WHERE dependency = %(d)s",
        {"d": "bench-downstream"},
    )
    if row is not None and row[0]:
        raise ConnectionError("downstream is out")
    params = _sink_params(ctx)
    await _sink_execute(_FENCED_UPSERT, params)


@sundial.job("bench.probe")
async def probe(args: dict[str, Any], ctx: sundial.JobContext) -> None:
    """Never run by a runner: bench/soak.py claims these itself to time the claim."""

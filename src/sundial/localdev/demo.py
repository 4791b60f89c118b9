"""``make demo``: Sundial end to end on one machine, without a cluster.

It starts a throwaway PostgreSQL, applies the migrations, loads the ScheduledJob manifests of
``examples/demo/`` through the same path the operator uses (``store.schedules.upsert``), and
runs the real ``sundial scheduler`` (trigger loop, maintainer) and ``sundial runner`` (claim,
lease, fenced finish) as child processes. Every few seconds it prints the newest runs, as
``kubectl get jobruns`` would; the ``flaky`` job fails its first attempt on purpose so a retry
with a higher attempt (the fencing token) shows up. Everything is removed at the end.

The Kubernetes half (operator, CRDs, ``kubectl get sj,jr``) runs on the local control plane
in ``hack/cluster``; see the README.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

import yaml

from sundial.api import scheduled_job
from sundial.localdev import postgres
from sundial.store import migrate, schedules
from sundial.store import pool as store_pool

_NAMESPACE = "demo"
_REPO = Path(__file__).resolve().parents[3]

_RUNS_QUERY = """
SELECT r.id, j.name, r.state, r.attempt, r.fire_time, r.started_at, r.finished_at,
       r.failure_reason
FROM job_runs r JOIN job_definitions j ON j.id = r.job_id
ORDER BY r.id DESC LIMIT %s
"""
_SUMMARY_QUERY = """
SELECT j.name, r.state, count(*) FROM job_runs r JOIN job_definitions j ON j.id = r.job_id
GROUP BY 1, 2 ORDER BY 1, 2
"""


def _load_manifests(directory: Path) -> list[scheduled_job.ScheduledJob]:
    manifests = []
    for path in sorted(directory.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document and document.get("kind") == scheduled_job.KIND:
                manifests.append(scheduled_job.ScheduledJob.model_validate(document))
    if not manifests:
        raise SystemExit(f"no ScheduledJob manifests found in {directory}")
    return manifests


def _short(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%H:%M:%S") if moment else "-"


def _table(rows: list[tuple[object, ...]]) -> str:
    header = ("RUN", "JOB", "STATE", "ATTEMPT", "FIRE TIME", "STARTED", "FINISHED", "REASON")
    lines = [header]
    for run_id, job, state, attempt, fire, started, finished, reason in rows:
        lines.append(
            (
                str(run_id),
                str(job),
                str(state),
                str(attempt),
                _short(fire),  # type: ignore[arg-type]
                _short(started),  # type: ignore[arg-type]
                _short(finished),  # type: ignore[arg-type]
                str(reason or ""),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in lines
    )


def _spawn(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "sundial", *args],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
        )


async def _run(seconds: float, manifests_dir: Path, interval: float) -> int:
    manifests = _load_manifests(manifests_dir)
    logs = Path(tempfile.mkdtemp(prefix="sundial-demo-"))
    with postgres.throwaway_postgres() as server:
        dsn = server.dsn
        print(f"PostgreSQL {dsn}  (logs of the scheduler and the runner in {logs})")
        for applied in migrate.migrate(dsn):
            print(f"  migration {applied.version:04d}_{applied.name}")
        pool = await store_pool.open_pool(dsn)
        children: list[subprocess.Popen[bytes]] = []
        try:
            now = datetime.now(UTC)
            for manifest in manifests:
                name = manifest.metadata.name
                if not name:
                    raise SystemExit(f"a ScheduledJob in {manifests_dir} has no metadata.name")
                result = await schedules.upsert(
                    pool,
                    uid=uuid.uuid5(uuid.NAMESPACE_URL, f"sundial-demo/{_NAMESPACE}/{name}"),
                    namespace=_NAMESPACE,
                    name=name,
                    generation=1,
                    spec=manifest.spec,
                    now=now,
                )
                print(
                    f"  ScheduledJob {_NAMESPACE}/{name}: {manifest.spec.schedule!r}, "
                    f"next fire {_short(result.next_fire_time)}"
                )
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [str(_REPO / "examples" / "handlers"), env.get("PYTHONPATH", "")]
            )
            children.append(_spawn(["scheduler", "--dsn", dsn], logs / "scheduler.log", env))
            children.append(
                _spawn(
                    ["runner", "--dsn", dsn, "--handlers", "hello", "--metrics-port", "-1"],
                    logs / "runner.log",
                    env,
                )
            )
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            deadline = loop.time() + seconds
            print(f"\nRunning for {seconds:.0f} s (Ctrl-C stops earlier) ...")
            while loop.time() < deadline and not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=interval)
                for child in children:
                    if child.poll() is not None:
                        print(f"a child process exited with {child.returncode}; see {logs}")
                        return 1
                async with pool.connection() as conn:
                    rows = await (await conn.execute(_RUNS_QUERY, (12,))).fetchall()
                print(f"\n--- {datetime.now(UTC):%H:%M:%S} newest runs ---")
                print(_table(rows))
            async with pool.connection() as conn:
                summary = await (await conn.execute(_SUMMARY_QUERY)).fetchall()
            print("\nRuns by job and state:")
            for job, state, count in summary:
                print(f"  {job:<8} {state:<14} {count}")
            return 0
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    child.kill()
            await pool.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to run")
    parser.add_argument("--interval", type=float, default=5.0, help="seconds between tables")
    parser.add_argument(
        "--manifests", type=Path, default=_REPO / "examples" / "demo", help="ScheduledJob YAMLs"
    )
    options = parser.parse_args(argv)
    return asyncio.run(_run(options.seconds, options.manifests, options.interval))


if __name__ == "__main__":
    raise SystemExit(main())

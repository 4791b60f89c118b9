"""A rolling upgrade from an earlier Sundial, with runs in flight: the new release's
`sundial migrate` runs while the earlier release's runners are serving, they keep claiming and
finishing against the new schema until they drain, the new release's runners take over, and
no run is lost or finished by a superseded attempt.

The earlier release is a pinned commit of main (``BASELINE``, docs/operations.md "Upgrading"
names it), taken out of this repository's history with ``git archive`` into a cache outside
the clone and run from its own source tree with this environment's dependencies. Its
migrations are a prefix of this release's, so the upgrade applies real migrations under
running code: a migration that drops or renames what the earlier runners use fails this test
(the second test shows it does).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
from collections import defaultdict
from typing import Any

import psycopg
import pytest

from sundial.store import migrate
from support.runner_loop import TESTS_DIR, Runners, create_job, eventually, states, submit

ROOT = TESTS_DIR.parent
#: main on 2026-12-05, before the active-run quotas (0270) and concurrency keys (0280).
BASELINE = "10117169b153cf0097e33c45784f722df83d10ab"


def _baseline_source() -> pathlib.Path:
    """The baseline's ``src/``, extracted once per machine."""
    shallow = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--is-shallow-repository"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if shallow == "true":
        pytest.skip(f"a shallow clone has no commit {BASELINE[:7]}: clone with full history")
    cache = pathlib.Path.home() / ".cache" / "sundial" / "baseline" / BASELINE[:12]
    if not (cache / "src" / "sundial").is_dir():
        partial = cache.with_name(cache.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", BASELINE, "src"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive, check=True)
        shutil.rmtree(cache, ignore_errors=True)
        partial.rename(cache)
    return cache / "src"


def _submit(dsn: str, job: Any, path: pathlib.Path, count: int, seconds: float) -> list[int]:
    return submit(dsn, job, count, {"path": str(path), "seconds": seconds})


def _executions(path: pathlib.Path) -> dict[int, list[tuple[int, int]]]:
    """run id -> [(attempt, runner pid)] from the handler's lines."""
    found: dict[int, list[tuple[int, int]]] = defaultdict(list)
    if path.exists():
        for line in path.read_text().splitlines():
            run_id, attempt, pid = (int(part) for part in line.split())
            found[run_id].append((attempt, pid))
    return found


def _this_release_with(directory: pathlib.Path, migration: str, sql: str) -> dict[str, str]:
    """This release's ``src/`` copied with one more migration: the environment that runs it."""
    source = directory / "src"
    shutil.copytree(
        ROOT / "src" / "sundial", source / "sundial", ignore=shutil.ignore_patterns("__pycache__")
    )
    (source / "sundial" / "store" / "migrations" / migration).write_text(sql)
    return {"PYTHONPATH": f"{source}{os.pathsep}{TESTS_DIR}"}


def _versions(env: dict[str, str]) -> list[int]:
    """The migrations the release run by ``env`` ships."""
    listed = subprocess.run(
        [sys.executable, "-c", "from sundial.store import migrate\n"
         "print(*(m.version for m in migrate.available()))"],
        env={**os.environ, **env}, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return [int(version) for version in listed.stdout.split()]


def _roll(
    make_database: Any, runners: Runners, tmp_path: pathlib.Path, new: dict[str, str]
) -> None:
    """From the baseline to the release ``new`` runs (its environment; ``{}``: this checkout):
    the new release's migrate while the earlier runners serve, then the roll. Fails the
    caller's test at the first sign of a lost run or an earlier runner broken by the schema."""
    earlier = {"PYTHONPATH": f"{_baseline_source()}{os.pathsep}{TESTS_DIR}"}
    dsn = make_database()
    subprocess.run(
        [sys.executable, "-m", "sundial", "migrate", "--dsn", dsn],
        env={**os.environ, **earlier},
        check=True,
        capture_output=True,
    )
    shipped = _versions(new) if new else [m.version for m in migrate.available()]
    before = migrate.applied_versions(dsn)
    assert before and before == shipped[: len(before)] and len(before) < len(shipped), (
        "the baseline's migrations must be a prefix of this release's, and fewer"
    )

    path = tmp_path / "executions.txt"
    job = create_job(dsn, "loop.record_after", max_retries=5)
    serving = ("--concurrency", "async=20", "--lease-seconds", "5", "--poll-seconds", "0.2")
    old = [runners.start(dsn, *serving, env=earlier) for _ in range(2)]
    # 120 runs of 6 s on 40 slots: runs are in flight for about 18 s, room for the migrate
    # process to start and finish on a busy machine (at 1 s each, 3 s were not enough there).
    first = _submit(dsn, job, path, 120, 6.0)
    eventually(lambda: states(dsn).get("running", 0) >= 20, what="runs in flight", within=30)

    # The new release's migrate hook, while the earlier runners hold runs.
    done = subprocess.run(
        [sys.executable, "-m", "sundial", "migrate", "--dsn", dsn],
        env={**os.environ, **new},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert migrate.applied_versions(dsn) == shipped
    in_flight_at_migration = states(dsn).get("running", 0)

    # The earlier runners keep serving the new schema: runs submitted now complete on them.
    second = _submit(dsn, job, path, 60, 0.2)
    old_pids = {runner.process.pid for runner in old}
    eventually(
        lambda: all(
            any(pid in old_pids for _, pid in _executions(path).get(run_id, []))
            for run_id in second[:20]
        ),
        what="the earlier runners to finish runs submitted after the migration",
        within=60,
    )

    # The roll: new runners start, the earlier ones drain on SIGTERM and exit 0.
    new_runners = [runners.start(dsn, *serving, env=new) for _ in range(2)]
    for runner in old:
        assert runner.terminate_and_wait(60) == 0, runner.log_path.read_text()[-3000:]
    third = _submit(dsn, job, path, 120, 0.2)
    everything = [*first, *second, *third]
    eventually(
        lambda: states(dsn).get("completed", 0) == len(everything),
        what="every run to complete",
        within=120,
    )

    with psycopg.connect(dsn) as conn:
        final = dict(
            conn.execute(
                "SELECT id, attempt FROM job_runs WHERE id = ANY(%s)", (everything,)
            ).fetchall()
        )
    executions = _executions(path)
    new_pids = {runner.process.pid for runner in new_runners}
    assert sorted(final) == sorted(everything)
    # Each run completed under an attempt that really ran (a finish by a superseded attempt
    # would leave a completed run whose final attempt never executed).
    assert [r for r in everything if final[r] not in {a for a, _ in executions[r]}] == []
    assert any(pid in new_pids for run in third for _, pid in executions[run])
    assert in_flight_at_migration > 0
    assert [runner.process.returncode for runner in old] == [0, 0]


def test_a_rolling_upgrade_with_runs_in_flight_loses_nothing(
    make_database: Any, runners: Runners, tmp_path: pathlib.Path
) -> None:
    _roll(make_database, runners, tmp_path, new={})


def test_a_migration_that_renames_what_earlier_runners_use_fails_the_upgrade(
    make_database: Any, runners: Runners, tmp_path: pathlib.Path
) -> None:
    """The test above can fail: a release whose newest migration renames a column that the
    earlier release's claim and finish use, without the ``-- compatible-from`` marker a
    contract step carries, breaks the earlier runners while they serve, and the roll says so."""
    broken = _this_release_with(
        tmp_path / "broken",
        "9990_lease_expiry_renamed.sql",
        "ALTER TABLE job_runs RENAME COLUMN lease_until TO lease_expires_at;\n",
    )
    with pytest.raises(AssertionError, match="the earlier runners to finish runs submitted"):
        _roll(make_database, runners, tmp_path, new=broken)

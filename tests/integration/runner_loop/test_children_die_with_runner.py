"""kill -9 of a runner leaves none of its children behind: process-pool workers, subprocess
children and their grandchildren all die with it (runner.lifeline). Real runner processes."""

from __future__ import annotations

import os
import pathlib
import time

from support.runner_loop import Runners, create_job, eventually, run_row, submit


def _alive(pid: int) -> bool:
    """A pid that exists and is not a zombie (a zombie has done all it ever will)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _descendants(root: int) -> set[int]:
    parents: dict[int, int] = {}
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        children = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= children
        frontier = children
    return found


def _pid(path: pathlib.Path) -> int | None:
    return int(path.read_text()) if path.exists() else None


def test_kill_9_of_a_runner_kills_its_workers_and_job_children(
    dsn: str, runners: Runners, tmp_path: pathlib.Path
) -> None:
    process_job = create_job(dsn, "loop.process_pid", execution_model=None)
    subprocess_job = create_job(dsn, "loop.subprocess_pid", execution_model=None)
    (process_run,) = submit(dsn, process_job, args={"dir": str(tmp_path)})
    (subprocess_run,) = submit(dsn, subprocess_job, args={"dir": str(tmp_path)})
    runner = runners.start(dsn)

    worker = eventually(lambda: _pid(tmp_path / "process.pid"), what="the pool worker")
    child = eventually(lambda: _pid(tmp_path / "subprocess.pid"), what="the subprocess child")
    grandchild = eventually(lambda: _pid(tmp_path / "grandchild.pid"), what="its grandchild")
    assert run_row(dsn, process_run)["state"] == run_row(dsn, subprocess_run)["state"] == "running"
    family = _descendants(runner.process.pid)
    assert {worker, child, grandchild} <= family, family

    runner.process.kill()
    runner.process.wait(10)
    killed_at = time.monotonic()

    survivors = eventually(
        lambda: not any(_alive(pid) for pid in family) or None,
        within=10,
        what=f"every child of the runner to die: {sorted(p for p in family if _alive(p))}",
    )
    assert survivors
    assert time.monotonic() - killed_at < 5


def test_a_worker_started_after_its_runner_died_exits_at_once() -> None:
    """The race the parent-pid check closes: a parent dead before the prctl."""
    import subprocess
    import sys

    code = (
        "import os, sys, time\n"
        "from sundial.runner import lifeline\n"
        "lifeline.die_with_parent(os.getppid() + 10_000_000)\n"  # not our parent: 'dead'
        "time.sleep(30)\n"
    )
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", code], timeout=20, check=False)
    assert result.returncode == -9
    assert time.monotonic() - started < 10
    assert os.getpid()  # the test process itself is untouched

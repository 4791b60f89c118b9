"""`make demo` end to end on the local cluster, non-interactively.

The demo is run as a user runs it (a subprocess of ``python -m sundial.localdev.demo``) until a
run of each kind has succeeded: the cron job in the runner, the delayed one-shot, the Pod job
OOMKilled on attempt 1 and succeeding with more memory, the DAG. Where the machine can host
the real node the demo takes that path (the operator, a runner and PostgreSQL as Pods there,
installed by the chart), and the test checks it did; elsewhere kwok's nodes and local
processes. Then everything it started must be gone: its child processes, the cluster's
processes, PostgreSQL, its temporary directory. A second run, on kwok's nodes
(``--no-real-node``), is interrupted with SIGINT, as Ctrl-C does, and must clean up too.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sundial.localdev import cluster
from sundial.localdev import demo as demo_module


@pytest.fixture(autouse=True)
def _cluster_binaries_built() -> None:
    """Checked when the test starts, not at import: on a cold cache the binaries are built
    after collection (``tests/cluster/conftest.py``), and a mark evaluated at import skipped
    these tests on every first run."""
    if cluster.missing_binaries():
        pytest.skip("the local cluster's binaries are not built")


DEMO = [sys.executable, "-m", "sundial.localdev.demo"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose here (its parent reaps it).
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" not in status.read_text()


def _processes_under(directory: str) -> list[str]:
    """Command lines of running processes that mention ``directory`` (cluster, PostgreSQL)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if directory in command and "pytest" not in command:
            found.append(f"{entry.name}: {command}")
    return found


def _assert_cleaned_up(output: str) -> None:
    [work] = re.findall(r"temporary files in (\S+)", output)
    # "-" when it started no process (the operator and runner ran as Pods on the real node).
    [pids] = re.findall(r"stopped and removed: processes ([\d ]+|-),", output)
    assert not Path(work).exists(), f"{work} is left behind"
    for pid in pids.split() if pids != "-" else ():
        assert not _alive(int(pid)), f"child {pid} still runs"
    deadline = time.monotonic() + 20
    while _processes_under(work) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _processes_under(work), _processes_under(work)


@pytest.mark.timeout(900)
def test_demo_runs_each_kind_once_and_removes_everything() -> None:
    real_node = os.geteuid() == 0 and demo_module.real_node_lacks(cluster.find_hack_dir()) == ""
    started = time.monotonic()
    result = subprocess.run(
        [*DEMO, "--until-first-runs", "--seconds", "600" if real_node else "300"],
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    output = result.stdout + result.stderr
    print(f"demo to its first runs of each kind, and cleaned up: {time.monotonic() - started:.0f}s")
    print(
        *(line for line in output.splitlines() if re.search(r"after|up in|once:", line)), sep="\n"
    )
    assert result.returncode == 0, output
    assert "every kind of run succeeded once: cron, one-shot, oom-then-more-memory, dag" in output
    # Not a TTY: plain lines, one per change, and no escape codes.
    assert "\x1b[" not in result.stdout
    # The OOM kill of attempt 1 is shown by its Pod's reason, OOMKilled, on attempt 1's Pod or,
    # when the retry's Pod came before a status mirror's pass (as it can on a busy machine), on
    # attempt 2's: the launcher keeps the Pod's reason with the failure, so it is one word.
    killed = r"jr/needs-more-memory \S+ attempt [12] \(OOMKilled\) pod \S+-[12]$"
    assert re.search(killed, output, re.M), output
    assert "jr/needs-more-memory Succeeded attempt 2" in output
    assert "CRDs Established" in output
    assert "kubectl get sj,jr -n sundial-demo" in output
    if real_node:
        # The chart put the operator, the runner and PostgreSQL on the real node as Pods.
        assert "Operator and runner as Pods on the real node" in output, output
        assert "local processes" not in output, output
        for component in ("operator", "runner", "postgresql"):
            assert re.search(rf"sundial-{component}-\S+ +1/1 +Running", output), output
    _assert_cleaned_up(output)


@pytest.mark.timeout(900)
def test_ctrl_c_stops_and_removes_everything() -> None:
    # Started with SIGINT ignored, as a shell without job control starts a background
    # command (a CI step, ``make demo &``): the demo must still stop on Ctrl-C.
    demo = subprocess.Popen(
        [*DEMO, "--no-real-node"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert demo.stdout is not None
    lines = []
    for line in demo.stdout:
        lines.append(line)
        if line.startswith("[7/7]"):
            break
    time.sleep(3)
    demo.send_signal(signal.SIGINT)
    try:
        # Stopping the operator and the runner, the cluster and PostgreSQL: a minute here.
        rest, _ = demo.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        demo.kill()  # never leave it running into the next test
        demo.communicate()
        raise
    output = "".join(lines) + rest
    assert demo.returncode == 130, output
    assert "interrupted: stopping" in output
    _assert_cleaned_up(output)

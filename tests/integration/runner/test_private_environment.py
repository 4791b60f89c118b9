"""A runner's environment holds the database DSN; a handler it starts runs as the same user and
must not read it from ``/proc/<runner>/environ``. Real processes; as root, both run as
``nobody`` (root reads every process's environment, whatever the process asks)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable

import pytest

from sundial.runner import lifeline

SECRET = "postgresql://sundial:s3cr3t-in-env@db/sundial"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc only")


def _as_the_same_unprivileged_user() -> Callable[[], None] | None:
    if os.getuid() != 0:
        return None
    nobody = pwd.getpwnam("nobody")

    def drop() -> None:
        os.setgid(nobody.pw_gid)
        os.setgroups([])
        os.setuid(nobody.pw_uid)

    return drop


def _start_holder(
    private: bool, drop: Callable[[], None] | None, python: str, module_dir: str
) -> subprocess.Popen[str]:
    """A process with the DSN in its environment, as the runner is; it says when it is ready.
    It loads ``runner/lifeline.py`` alone (standard library only) from ``module_dir``."""
    code = textwrap.dedent(
        f"""
        import importlib.util, time
        spec = importlib.util.spec_from_file_location("lifeline", {module_dir!r} + "/lifeline.py")
        lifeline = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(lifeline)
        if {private!r}:
            assert lifeline.keep_environment_private()
        print("ready", flush=True)
        time.sleep(60)
        """
    )
    return subprocess.Popen(
        [python, "-c", code],
        env={"PATH": "/usr/bin:/bin", "SUNDIAL_DSN": SECRET},
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=drop,
    )


def _read_environ(
    pid: int, drop: Callable[[], None] | None, python: str
) -> subprocess.CompletedProcess[str]:
    """What a handler of the same user reads of the holder's environment."""
    return subprocess.run(
        [python, "-c", f"print(open('/proc/{pid}/environ').read())"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
        preexec_fn=drop,
    )


@pytest.mark.parametrize("private", [False, True])
def test_a_process_of_the_same_user_reads_the_environment_only_if_it_is_not_kept_private(
    private: bool,
) -> None:
    drop = _as_the_same_unprivileged_user()
    # As root the processes run as nobody, who may not read this test's interpreter or tree:
    # the system's Python and a world-readable copy of the module.
    python = "/usr/bin/python3" if drop is not None else sys.executable
    module_dir = tempfile.mkdtemp(prefix="sundial-lifeline-")
    os.chmod(module_dir, 0o755)
    shutil.copy(lifeline.__file__, module_dir)
    os.chmod(os.path.join(module_dir, "lifeline.py"), 0o644)
    holder = _start_holder(private, drop, python, module_dir)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        result = _read_environ(holder.pid, drop, python)
        if private:
            assert SECRET not in result.stdout
            assert "Permission denied" in result.stderr
        else:
            # The control: without it the secret is there to read.
            assert SECRET in result.stdout, result.stderr
    finally:
        holder.kill()
        holder.communicate(timeout=10)  # reaps it and closes its stdout pipe
        shutil.rmtree(module_dir)

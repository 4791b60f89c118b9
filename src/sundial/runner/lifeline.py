"""Children die with their runner: no worker process or job child outlives a ``kill -9``.

A runner killed with SIGKILL runs no cleanup, and a lease that expires hands its runs to
another runner. A process-pool worker or a ``sundial exec`` child still alive then would go
on doing the job's side effects next to the new attempt. So every child watches its runner:

* **Process-pool workers** ask the kernel for SIGKILL when their parent goes
  (``prctl(PR_SET_PDEATHSIG)``), from the pool's initializer. The kernel sends it when the
  *thread* that forked the worker ends, not the process: the pool spawns its workers from
  the thread of the first ``submit``, which in the runner is the event loop's thread, alive as
  long as the runner (a pool driven from a short-lived thread must pass
  ``parent_death_signal=False``, or its workers would die with that thread). A thread in the
  worker also checks ``getppid()`` twice a second, and once at once for a runner that died
  before the ``prctl``: the fallback where ``prctl`` is missing (not Linux).
* **Subprocess children** (``sundial exec``) run in their own session so that a timeout can
  kill their whole process group, grandchildren included. ``PR_SET_PDEATHSIG`` would kill
  only the child itself, so they watch a pipe instead (``Lifeline``): the runner holds its
  write end and never writes; the kernel closes it when the runner dies, however it dies,
  and the child's watcher thread, reading end-of-file, SIGKILLs the child's process group.
  The pipe cannot race: a runner dead before the child started reads as end-of-file at once.

What this does not cover: a grandchild that leaves the child's process group (``setsid``)
on purpose, and the grandchildren of a process-pool worker.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Mapping

#: The variable naming the lifeline's read end in a ``sundial exec`` child.
ENV_FD = "SUNDIAL_LIFELINE_FD"

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_POLL_SECONDS = 0.5


def set_parent_death_signal(signum: int = signal.SIGKILL) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent thread ends.

    Returns False where it cannot (not Linux, no libc): callers keep a fallback.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def keep_environment_private() -> bool:
    """Make this process's ``/proc/PID/environ`` (and memory) unreadable to other processes of
    the same user: ``prctl(PR_SET_DUMPABLE, 0)``. The runner's environment holds the database
    DSN, and the handlers it starts as subprocesses run as its user; their own environment is
    stripped of it, but ``/proc/$PPID/environ`` would still show it. Only root (CAP_SYS_PTRACE)
    reads it then. False where it cannot (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent(parent_pid: int, *, parent_death_signal: bool = True) -> None:
    """In a child process: be SIGKILLed when ``parent_pid`` stops being the parent."""
    if parent_death_signal:
        set_parent_death_signal(signal.SIGKILL)
    # After the prctl: a parent that died before it would otherwise never be noticed.
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGKILL)
    _watch(lambda: os.getppid() != parent_pid, None, _kill_self)


def watch_pipe(fd: int, *, on_closed: Callable[[], None] | None = None) -> None:
    """In a ``sundial exec`` child: kill its process group when the lifeline ``fd`` closes.

    The parent-pid check runs beside it, in case the child was started with a pipe whose
    write end some other process also holds.
    """
    with contextlib.suppress(OSError):
        os.set_inheritable(fd, False)  # grandchildren need not keep the read end
    parent = os.getppid()
    _watch(lambda: os.getppid() != parent, fd, on_closed or _kill_process_group)


def watch_from_environment(environ: Mapping[str, str]) -> bool:
    """Start ``watch_pipe`` on the fd ``ENV_FD`` names; False if it names none."""
    text = environ.get(ENV_FD)
    if not text:
        return False
    try:
        fd = int(text)
        os.fstat(fd)
    except (ValueError, OSError):
        return False
    watch_pipe(fd)
    return True


class Lifeline:
    """The runner's side: a pipe whose write end only this process holds, until it dies."""

    def __init__(self) -> None:
        self.read_fd, self._write_fd = os.pipe()  # both close-on-exec; children get read_fd
        # via pass_fds only, so no child ever holds the write end.

    def close(self) -> None:
        for fd in (self.read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


def _watch(orphaned: Callable[[], bool], fd: int | None, die: Callable[[], None]) -> None:
    def watch() -> None:
        while True:
            if fd is not None:
                try:
                    readable, _, _ = select.select([fd], [], [], _POLL_SECONDS)
                    if readable and os.read(fd, 1) == b"":
                        break
                except OSError:
                    break
            else:
                threading.Event().wait(_POLL_SECONDS)
            if orphaned():
                break
        die()

    threading.Thread(target=watch, name="sundial-lifeline", daemon=True).start()


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _kill_process_group() -> None:
    # Only a group of our own (the runner starts children with start_new_session): never the
    # group of whoever else may have started this process.
    with contextlib.suppress(OSError):
        if os.getpgid(0) == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
    _kill_self()

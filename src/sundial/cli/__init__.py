"""The ``sundial`` command: the one entry point for operators, runners and people.

* ``app``: the ``sundial`` group; every module below registers its commands on it.
* ``admin``: ``crds``, ``migrate``, ``exec``: setting up and trying a handler.
* ``daemons``: ``scheduler``, ``runner``, ``pod-launcher``, ``operator``: the long-running
  processes (JSON logs, SIGTERM stops them cleanly).
* ``runs``: ``sundial runs`` for administrators: history (filtered, and why each run waits),
  submit, cancel, replay, with only PostgreSQL.
* ``pods``: ``sundial pods release``, for uninstalling.
* ``options``: what several commands share (the database, memory, durations, log levels).
"""

from __future__ import annotations

from sundial.cli import admin, daemons, pods, quotas, runs
from sundial.cli.app import main
from sundial.cli.runs import (
    EXIT_NO_SUCH_JOB,
    EXIT_NO_SUCH_RUN,
    EXIT_RUN_REFUSED,
    EXIT_STORE_UNAVAILABLE,
)

__all__ = [
    "EXIT_NO_SUCH_JOB",
    "EXIT_NO_SUCH_RUN",
    "EXIT_RUN_REFUSED",
    "EXIT_STORE_UNAVAILABLE",
    "admin",
    "daemons",
    "main",
    "pods",
    "quotas",
    "runs",
]

"""Exit codes and the one error type every verb raises.

The codes are part of the plugin's interface (scripts branch on them), so they are named here
once and printed in ``kubectl sundial --help``.
"""

from __future__ import annotations

from typing import Final

import click

from sundial import errors

__all__ = ["EXIT_CODES_HELP", "PluginError"]

OK: Final = 0
#: The outcome was a failure: a run Failed, TimedOut or was DeadLettered; lint found problems.
FAILED: Final = 1
#: Bad usage: an unknown option, a malformed value (click's own code).
USAGE: Final = 2
#: The object, or the resource type (the CRDs are not installed), does not exist.
NOT_FOUND: Final = 3
#: ``wait``: the run was Cancelled.
CANCELLED: Final = 4
#: ``wait``, ``replay``: ``--timeout`` passed before the run finished (or the replay was taken).
TIMEOUT: Final = 5
#: RBAC forbids a request the verb needs.
FORBIDDEN: Final = 6
#: No kubeconfig, or the API server (or the history API) cannot be reached.
UNREACHABLE: Final = 7

EXIT_CODES_HELP: Final = (
    "Exit codes: 0 success; 1 the outcome was a failure (a run Failed, TimedOut or "
    "DeadLettered, lint found problems, a replay was refused); 2 bad usage; 3 not found "
    "(the object, or the CRDs are not installed); 4 the run was Cancelled (wait); "
    "5 --timeout passed (wait, replay); 6 forbidden by RBAC; 7 no kubeconfig or the server cannot "
    "be reached."
)


class PluginError(errors.SundialError, click.ClickException):
    """An error the user can act on: ``message`` says what went wrong and what to do."""

    def __init__(self, message: str, exit_code: int = FAILED) -> None:
        super().__init__(message)
        #: The process's exit status (``main`` exits with it; click's own ``exit_code`` is a
        #: class attribute).
        self.code = exit_code

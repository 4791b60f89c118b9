"""Where a handler runs: the execution model, defined once.

Every layer names these values through this enum: the custom resources' ``executionModel``
(``common.HandlerSpec``), the runner's handler registry (``@sundial.job(execution_model=...)``),
the claim's filter, and the PostgreSQL CHECK constraints on ``job_definitions`` and
``job_runs`` (a test compares the constraint with ``ExecutionModel``).

Where a run's model comes from: the manifest's ``executionModel`` when it names one, else the
handler's registration (``@sundial.job``), which is the authority a manifest may only repeat.
A run whose model is not set (NULL in the store) is claimed by whichever runner registers its
handler, under that registration's model; a manifest naming a runner model other than the
registration's leaves its runs unclaimed, with a reason in ``sundial runs`` and the JobRun.
"""

from __future__ import annotations

import enum

__all__ = ["DEFAULT", "RUNNER_MODELS", "ExecutionModel"]


class ExecutionModel(enum.StrEnum):
    ASYNC = "async"
    """An ``async def`` handler on the runner's event loop."""
    THREAD = "thread"
    """A plain ``def`` handler in the runner's thread pool."""
    PROCESS = "process"
    """A plain ``def`` handler in the runner's process pool (CPU-bound work)."""
    SUBPROCESS = "subprocess"
    """A handler in its own child process (``sundial exec``), killable with its group."""
    POD = "pod"
    """A handler in a Pod of the runner image, launched by the pod launcher."""


RUNNER_MODELS: frozenset[ExecutionModel] = frozenset(
    {
        ExecutionModel.ASYNC,
        ExecutionModel.THREAD,
        ExecutionModel.PROCESS,
        ExecutionModel.SUBPROCESS,
    }
)
"""The models a runner serves (and a handler may be registered with)."""

DEFAULT = ExecutionModel.ASYNC
"""The registration's default: ``@sundial.job`` without ``execution_model``."""

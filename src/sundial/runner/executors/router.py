"""Routes each invocation to the executor its handler was registered for."""

from __future__ import annotations

from collections.abc import Mapping

from sundial.runner import invocation, outcomes, registry
from sundial.runner.executors import base


class ExecutorRouter:
    def __init__(
        self,
        handlers: registry.Registry,
        executors: Mapping[registry.ExecutionModel, base.Executor],
    ) -> None:
        self._handlers = handlers
        self._executors = dict(executors)

    @property
    def executors(self) -> Mapping[registry.ExecutionModel, base.Executor]:
        return self._executors

    def executor_for(self, handler_name: str) -> base.Executor | None:
        """None when the handler is unknown or its model has no executor here."""
        if handler_name not in self._handlers:
            return None
        return self._executors.get(self._handlers.get(handler_name).execution_model)

    async def run(self, job: invocation.Invocation) -> outcomes.Outcome:
        prepared = base.prepare(self._handlers, job)
        if isinstance(prepared, outcomes.Failed):
            return prepared
        model = prepared.handler.execution_model
        executor = self._executors.get(model)
        if executor is None:
            return outcomes.Failed(
                f"handler {job.handler!r} needs the {model.value!r} executor, which this "
                "runner does not run",
                outcomes.FailureClass.UNKNOWN_HANDLER,
            )
        return await executor.run(job)

    async def close(self) -> None:
        for executor in self._executors.values():
            await executor.close()

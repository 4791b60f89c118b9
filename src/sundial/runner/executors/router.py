"""Routes each invocation to the executor its handler was registered for."""

from __future__ import annotations

from collections.abc import Mapping

from sundial.observability import metrics
from sundial.runner import invocation, outcomes, registry
from sundial.runner.executors import base, thread_executor


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
                outcomes.FailureDetail.UNKNOWN_HANDLER,
            )
        return await executor.run(job)

    def track(self, runner_metrics: metrics.RunnerMetrics) -> None:
        """Export every executor's saturation (and leaked thread slots) at scrape time."""
        for executor in self._executors.values():
            _track(runner_metrics, executor)

    async def close(self) -> None:
        for executor in self._executors.values():
            await executor.close()


def _track(runner_metrics: metrics.RunnerMetrics, executor: base.Executor) -> None:
    runner_metrics.track_pool(executor.name, lambda: executor.size, lambda: executor.busy)
    if isinstance(executor, thread_executor.ThreadExecutor):
        threads = executor
        runner_metrics.track_leaked_thread_slots(lambda: threads.leaked)

from __future__ import annotations

from sundial.observability import metrics
from sundial.runner import outcomes, registry
from sundial.runner.executors import async_executor, router, thread_executor
from support.invocations import invoke


async def test_each_handler_goes_to_the_executor_of_its_model() -> None:
    handlers = registry.default_registry
    threads = thread_executor.ThreadExecutor(handlers, max_workers=1)
    routes = router.ExecutorRouter(
        handlers,
        {
            registry.ExecutionModel.ASYNC: async_executor.AsyncExecutor(handlers),
            registry.ExecutionModel.THREAD: threads,
        },
    )
    try:
        assert await routes.run(invoke("sample.thread_ok")) == outcomes.Succeeded()
        assert await routes.run(invoke("sample.async_ok")) == outcomes.Succeeded()
        missing = await routes.run(invoke("sample.process_ok"))
        assert isinstance(missing, outcomes.Failed)
        assert "'process' executor" in missing.error
        unknown = await routes.run(invoke("os.system"))
        assert isinstance(unknown, outcomes.Failed)
        assert unknown.detail is outcomes.FailureDetail.UNKNOWN_HANDLER
    finally:
        await routes.close()


async def test_track_exports_saturation_of_every_executor() -> None:
    handlers = registry.default_registry
    routes = router.ExecutorRouter(
        handlers,
        {
            registry.ExecutionModel.ASYNC: async_executor.AsyncExecutor(
                handlers, max_concurrency=9
            ),
            registry.ExecutionModel.THREAD: thread_executor.ThreadExecutor(handlers, max_workers=3),
        },
    )
    runner_metrics = metrics.RunnerMetrics()
    routes.track(runner_metrics)
    text = runner_metrics.exposition().decode()
    await routes.close()
    assert 'sundial_pool_slots{executor="async"} 9.0' in text
    assert 'sundial_pool_slots{executor="thread"} 3.0' in text
    assert 'sundial_pool_busy_slots{executor="thread"} 0.0' in text
    assert "sundial_leaked_thread_slots 0.0" in text

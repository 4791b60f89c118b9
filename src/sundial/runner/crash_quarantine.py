"""Crash quarantine, per runner: a handler whose attempts keep killing their worker process is
no longer claimed here.

After ``after_crashes`` attempts of one handler killed their process-pool worker in this
runner (``process_executor.ProcessExecutor.crash_counts``), the runner stops claiming that
handler until it restarts: it logs ``handler quarantined`` and sets
``sundial_quarantined_handlers{handler} 1``. Nothing else changes for the runs: the crashed
attempts are finished as crashes (retried with backoff, dead-lettered when retries are spent),
and another runner, or this one after a restart, may take them.
"""

from __future__ import annotations

import logging

from prometheus_client import CollectorRegistry, Gauge

from sundial.runner.executors import process_executor

log = logging.getLogger("sundial.runner")


class CrashQuarantine:
    """The handlers this runner no longer claims; ``in`` asks whether one is quarantined."""

    def __init__(
        self,
        executor: process_executor.ProcessExecutor | None,
        *,
        after_crashes: int,
        worker_id: str,
        registry: CollectorRegistry,
    ) -> None:
        self.executor = executor
        self.after_crashes = after_crashes
        self.worker_id = worker_id
        self.handlers: set[str] = set()
        self.gauge = Gauge(
            "sundial_quarantined_handlers",
            "1 for each handler this runner stopped claiming after repeated process crashes.",
            ["handler"],
            registry=registry,
        )

    def __contains__(self, handler_name: str) -> bool:
        return handler_name in self.handlers

    def crashed(self, handler_name: str) -> None:
        """An attempt of ``handler_name`` killed its worker process: quarantine the handler
        once its crashes here reach the limit."""
        if self.executor is None:
            return
        crashes = self.executor.crash_counts[handler_name]
        if crashes >= self.after_crashes and handler_name not in self.handlers:
            self.handlers.add(handler_name)
            self.gauge.labels(handler=handler_name).set(1)
            log.error(
                "handler quarantined",
                extra={
                    "handler": handler_name,
                    "crashes": crashes,
                    "worker": self.worker_id,
                    "reason": f"{crashes} attempts killed their worker process; this runner "
                    "no longer claims this handler until it restarts",
                },
            )

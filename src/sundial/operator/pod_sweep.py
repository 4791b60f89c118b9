"""The Pod sweep: ended Pods collected once their run left its ScheduledJob's window.

At most every ``pod_gc_interval`` (where the operator collects its launcher's Pods, as the
chart sets it up) a mirror pass lists this installation's ended Pods; the pass reads the
windows of the ScheduledJobs that own one, and ``collect`` deletes those whose run left its
window or was never in it (``pods.pod_gc`` decides), so a job's Pods stay bounded by its window
like its JobRuns. Deletes hold the pass's write slots.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

from sundial.operator import context
from sundial.pods import pod_gc
from sundial.store import history

__all__ = ["PodSweep"]

log = logging.getLogger("sundial.operator.mirror")


class PodSweep:
    def __init__(self, ctx: context.Context, writes: asyncio.Semaphore) -> None:
        self._ctx = ctx
        self._writes = writes
        self._last: float | None = None  # when the last sweep started (monotonic)

    def pending(self) -> bool:
        """Whether a Pod sweep is due (nothing changes: ``due`` takes it)."""
        if self._ctx.settings.pod_instance is None:
            return False
        interval = self._ctx.settings.pod_gc_interval.total_seconds()
        last = self._last
        return last is None or time.monotonic() - last >= interval

    def due(self) -> bool:
        """Whether a Pod sweep is due; if so, it counts as started now."""
        if not self.pending():
            return False
        self._last = time.monotonic()
        return True

    async def ended_pods(self) -> list[pod_gc.EndedPod] | None:
        instance = self._ctx.settings.pod_instance
        if instance is None:
            return None
        try:
            return await pod_gc.ended_pods(self._ctx.api, self._ctx.settings.namespaces, instance)
        except Exception:
            log.exception("could not list finished Pods; they are collected on a later pass")
            return None

    async def collect(
        self,
        ended_pods: list[pod_gc.EndedPod],
        kept: Mapping[uuid.UUID, set[int]],
        users: list[Mapping[str, Any]],
    ) -> None:
        """Delete the ended Pods whose run left its window (``pod_gc``)."""
        followed = {
            int(body["status"]["runId"])
            for body in users
            if (body.get("status") or {}).get("runId") is not None
        }
        candidates = pod_gc.unkept(ended_pods, kept, followed)
        if not candidates:
            return
        try:
            known = await history.runs(self._ctx.pool, [pod.run_id for pod in candidates])
        except Exception:
            log.exception("could not read the runs of finished Pods; collected on a later pass")
            return
        states = {run_id: run.state for run_id, run in known.items()}
        deleted = await pod_gc.delete(
            self._ctx.api, pod_gc.collectable(candidates, states), self._writes
        )
        if deleted:
            log.info("deleted finished Pods outside their window", extra={"pods": deleted})

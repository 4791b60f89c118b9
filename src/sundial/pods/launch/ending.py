"""An ended attempt finished: its Pod's outcome through the job's failure policy, one fenced
write for the batch, then the Pods released (their outcome finalizer removed) and the host told.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from sundial.attempt import finishes
from sundial.pods import failure_policy
from sundial.pods.launch.attempt import PodAttempt
from sundial.pods.launch.settings import AttemptEnd
from sundial.pods.launch.state import Phase
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import failures
from sundial.store import claims, pod_runs

__all__ = ["Ending"]

log = logging.getLogger("sundial.pod_launcher")


def failure_detail(outcome: PodOutcome, verdict: failure_policy.Verdict) -> str | None:
    """The failed attempt's detail: the Pod's own reason (OOMKilled, Evicted, ImagePullBackOff
    ...), kept with the run's failure so the JobRun names it the same way once the retry's Pod
    has replaced this one (which clears the run's Pod columns). A timeout is ``Timeout``
    (``finishes``'s default), as a runner's timeout is."""
    if verdict.failure == failures.FailureClass.TIMEOUT or not outcome.reason:
        return None
    return outcome.reason[: finishes.MAX_DETAIL_CHARS]


class Ending(Phase):
    async def end(self, ended: Sequence[tuple[PodAttempt, PodOutcome]]) -> None:
        """Record each Pod's end on its run, decide it by the job's failure policy, and finish
        them all in one fenced write."""
        results: list[tuple[PodAttempt, claims.Finish, failure_policy.Verdict | None]] = []
        for attempt, outcome in ended:
            if outcome.state in (PodState.NEVER_STARTED, PodState.DEADLINE_EXCEEDED):
                await self._pods.delete(attempt.namespace, attempt.pod_name)
            verdict = failure_policy.decide(
                attempt.context.failure_policy,
                outcome,
                pod_deletion_policy=attempt.context.pod_deletion_policy,
            )
            await pod_runs.record_pod(
                self._pool,
                self._settings.worker,
                attempt.run.id,
                attempt.run.attempt,
                pod_name=attempt.pod_name,
                pod_uid=attempt.pod_uid,
                exit_code=outcome.exit_code,
                reason=outcome.reason,
            )
            if attempt.cancel_reason is not None:
                cancelled = finishes.cancelled(attempt.run, attempt.cancel_reason)
                results.append((attempt, cancelled, None))
            elif verdict.failure is None:
                results.append((attempt, finishes.succeeded(attempt.run), verdict))
            elif verdict.failure is failures.FailureClass.CANCELLED:
                # The same fenced end as a cancel request: state cancelled, dependents cancelled.
                reason = f"{outcome.describe()} (podDeletionPolicy: Cancel)"
                results.append((attempt, finishes.cancelled(attempt.run, reason), verdict))
            else:
                error = outcome.describe()
                if verdict.action:
                    error = f"{error} (failurePolicy: {verdict.action})"
                result = finishes.failed(
                    attempt.run, error, verdict.failure, detail=failure_detail(outcome, verdict)
                )
                results.append((attempt, result, verdict))
            log.info(
                "run %s attempt %s: Pod %s ended %s",
                attempt.run.id,
                attempt.run.attempt,
                attempt.pod_name,
                outcome.describe(),
            )
        await self.finish(results)

    async def finish(
        self,
        results: Sequence[tuple[PodAttempt, claims.Finish, failure_policy.Verdict | None]],
    ) -> None:
        """Write ``results`` fenced, release their Pods, let go of the attempts, and tell the
        host of each end that counted (a lost one is only logged)."""
        if not results:
            return
        result = await claims.finish(
            self._pool, self._settings.worker, [outcome for _, outcome, _ in results]
        )
        # Committed (or lost to a newer attempt): nothing more is to be read off these Pods.
        await self.release(
            [(a.namespace, a.pod_name) for a, _, _ in results if a.created_at is not None]
        )
        for attempt, outcome, verdict in results:
            if self._attempts.get(attempt.run.id) is attempt:
                del self._attempts[attempt.run.id]
            if outcome.run_id in result.lost:
                log.warning("run %s attempt %s: finish discarded (lease lost)", *attempt.key)
            else:
                if verdict is not None and verdict.quarantine:
                    await pod_runs.quarantine_schedule(
                        self._pool, attempt.run.id, f"failurePolicy Quarantine: {outcome.error}"
                    )
                await self._report_end(attempt, result.states.get(attempt.run.id))

    async def _report_end(self, attempt: PodAttempt, run_state: str | None) -> None:
        if self._hooks is None or attempt.ended is None:
            return
        end = AttemptEnd(
            run_id=attempt.run.id,
            attempt=attempt.run.attempt,
            job_id=str(attempt.run.job_id),
            namespace=attempt.namespace,
            job_name=attempt.context.job_name,
            pod_name=attempt.pod_name,
            outcome=attempt.ended,
            run_state=run_state,
            idempotency_key=attempt.run.idempotency_key,
        )
        try:
            await self._hooks.ended(end)
        except Exception:  # reporting never undoes a committed finish
            log.exception("run %s attempt %s: reporting its end failed", *attempt.key)

    async def release(self, pods: Sequence[tuple[str, str]]) -> None:
        """Remove the outcome finalizer of ``pods`` ((namespace, name)), a few at a time. A
        release that fails is logged: the Pod stays tracked, and the next step's sweep
        releases it once it sees the attempt is no longer held."""
        if not pods:
            return
        limit = asyncio.Semaphore(self._settings.release_concurrency)

        async def release(namespace: str, name: str) -> None:
            async with limit:
                try:
                    await self._pods.release(namespace, name)
                except Exception:
                    log.exception("could not release Pod %s/%s; retried later", namespace, name)

        await asyncio.gather(*(release(namespace, name) for namespace, name in pods))

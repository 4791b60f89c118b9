"""The Pods of the held attempts read and classified (level triggered: one LIST of the tracked
Pods, a GET for each one missing from it), ended attempts handed to ``ending``, and tracked
Pods of attempts no longer current deleted or released."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from sundial.pods import outcomes, pod_api
from sundial.pods.launch.attempt import (
    PodAttempt,
    is_its_pod,
    remember_delete_request,
    timeout_seconds,
)
from sundial.pods.launch.ending import Ending
from sundial.pods.launch.settings import OWNER_DELETED
from sundial.pods.launch.state import LaunchState, Phase
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import run_state
from sundial.store import pod_runs

__all__ = ["Observing"]

log = logging.getLogger("sundial.pod_launcher")


class Observing(Phase):
    """Reads the Pods of the held attempts each step and hands the ended ones to ``Ending``."""

    def __init__(self, state: LaunchState, ending: Ending) -> None:
        super().__init__(state)
        self._ending = ending

    async def observe(self) -> None:
        """Classify the Pods of the attempts we hold; delete live Pods of stale attempts.

        Reads only what is unaccounted for: the LIST selects the tracked Pods (live, or ended
        with their outcome not yet recorded), not the released ones the mirror keeps for the
        JobRun window, which can outnumber them a hundred to one. An attempt whose Pod is not
        in the list was released or is gone (a Pod created before the finalizer existed, or
        one whose finalizer someone removed); one GET by its name says which.
        """
        pods = await self._pods.list(
            self._settings.namespaces, pod_api.tracked_selector(self._settings.manifest.instance)
        )
        by_attempt: dict[tuple[int, int], dict[str, Any] | None] = {}
        for listed in pods:
            key = (pod_api.run_of(listed), pod_api.attempt_of(listed))
            if self._state.forged(listed):
                await self._state.report_forged(self._attempts[key[0]], listed)
                continue
            by_attempt[key] = listed
        watched = [
            a for a in self._attempts.values() if a.created_at is not None and a.ended is None
        ]
        missing = [a for a in watched if a.key not in by_attempt]
        if missing:
            found = await self._pods.get_many([(a.namespace, a.pod_name) for a in missing])
            for absent, got in zip(missing, found, strict=True):
                if got is not None and not is_its_pod(absent, got):
                    # Its name, in its namespace, but another object: the Pod we created was
                    # deleted and someone made this one. Ours is gone.
                    await self._state.report_forged(absent, got)
                    got = None
                by_attempt[absent.key] = got
        now = self._clock.now()
        ended: list[tuple[PodAttempt, PodOutcome]] = []
        for attempt in list(self._attempts.values()):
            if attempt.created_at is None:
                continue
            if attempt.ended is not None:
                ended.append((attempt, attempt.ended))
                continue
            pod = by_attempt.get(attempt.key)
            remember_delete_request(attempt, pod)
            outcome = outcomes.classify(
                pod,
                now=now,
                start_timeout=self._state.start_timeout(attempt),
                deletion_slack=timedelta(seconds=self._settings.deletion_slack_seconds),
                delete_requested_at=attempt.delete_requested_at,
            )
            attempt.started_at = outcomes.started_at(pod) or attempt.started_at
            deadline = self._state.deadline(attempt, attempt.created_at)
            if outcome.state is PodState.GONE:
                outcome = await self._gone_with_owner(attempt, outcome)
            if not outcome.state.ended and now > deadline:
                outcome = PodOutcome(
                    PodState.DEADLINE_EXCEEDED,
                    "DeadlineExceeded",
                    message=f"running past timeoutSeconds ({timeout_seconds(attempt.run)} s)",
                )
            if outcome.state.ended:
                attempt.ended = outcome
                ended.append((attempt, outcome))
        # Decided before the ends: a Pod released by its own finish below is not swept again.
        # A forged Pod is neither held nor swept: it is not ours to delete or release.
        unheld = [pod for pod in pods if not self._state.holds(pod) and not self._state.forged(pod)]
        await self._ending.end(ended)
        await self._sweep(unheld)

    async def _gone_with_owner(self, attempt: PodAttempt, outcome: PodOutcome) -> PodOutcome:
        """``outcome`` (GONE), or an ``OWNER_DELETED`` one if the hooks say the Pod went with
        its deleted owner; then the attempt is cancelled (``cancel_reason``)."""
        if self._hooks is None or attempt.owner is None:
            return outcome
        try:
            reason = await self._hooks.deleted_with_owner(attempt.namespace, attempt.owner)
        except Exception:  # unknown: let the next step ask again rather than guess a retry
            log.exception("run %s: could not read the owner of its gone Pod", attempt.run.id)
            return PodOutcome(PodState.RUNNING, "Unknown")
        if reason is None:
            return outcome
        attempt.cancel_reason = reason
        return PodOutcome(PodState.GONE, OWNER_DELETED, message=reason)

    async def _sweep(self, pods: Sequence[Mapping[str, Any]]) -> None:
        """``pods``: tracked Pods whose attempt this launcher does not hold. Delete the live ones
        that are stale, and release every one whose attempt is no longer current.

        An attempt is current while its run is running under that attempt (held by this
        launcher while adopting, or by another one); a Pod of a newer attempt than the store
        showed is a claim newer than our read, and is left alone too. Everything else is done:
        the run finished, moved on, or went back to pending after a lost lease. An ended Pod of
        a stale attempt is released and left for the mirror's sweep
        (docs/adr/0011-finished-pod-gc.md)."""
        candidates = list(pods)
        if not candidates:
            return
        current = await pod_runs.current_attempts(
            self._pool, [pod_api.run_of(p) for p in candidates]
        )
        done = []
        for pod in candidates:
            run = current.get(pod_api.run_of(pod))
            pod_attempt = pod_api.attempt_of(pod)
            if (
                run is not None
                and run.attempt == pod_attempt
                and run.state == run_state.RunState.RUNNING
            ):
                continue  # current: held by this launcher (being adopted) or another one
            if run is not None and run.attempt < pod_attempt:
                continue  # a claim newer than our read: not stale
            metadata = pod["metadata"]
            if not pod_api.ended(pod) and not metadata.get("deletionTimestamp"):
                log.info("deleting stale Pod %s/%s", metadata["namespace"], metadata["name"])
                await self._pods.delete(metadata["namespace"], metadata["name"])
            done.append((str(metadata["namespace"]), str(metadata["name"])))
        await self._ending.release(done)

"""What the pod launcher's phases share: the attempts it holds, its clients, clock and hooks,
and the judgements more than one phase makes (is this Pod ours, when does an attempt time out).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sundial.pods import pod_api
from sundial.pods.launch.attempt import PodAttempt, is_its_pod, timeout_seconds
from sundial.pods.launch.settings import LauncherSettings, LaunchHooks
from sundial.scheduling import clock as clocks
from sundial.store.pool import Pool

__all__ = ["LaunchState", "Phase"]

log = logging.getLogger("sundial.pod_launcher")


@dataclass
class LaunchState:
    pool: Pool
    pods: pod_api.PodApi
    settings: LauncherSettings
    clock: clocks.Clock
    hooks: LaunchHooks | None
    #: Run id -> the attempt held. One dict for the launcher's life: the phases and the
    #: heartbeats hold it by reference.
    attempts: dict[int, PodAttempt] = field(default_factory=dict)
    forgeries_reported: set[str] = field(default_factory=set)  # Pod UIDs, reported once each

    def holds(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` is the Pod of an attempt this launcher holds."""
        attempt = self.attempts.get(pod_api.run_of(pod))
        return (
            attempt is not None
            and attempt.run.attempt == pod_api.attempt_of(pod)
            and is_its_pod(attempt, pod)
        )

    def forged(self, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod`` wears the labels of an attempt this launcher holds but is not its Pod."""
        attempt = self.attempts.get(pod_api.run_of(pod))
        return (
            attempt is not None
            and attempt.run.attempt == pod_api.attempt_of(pod)
            and not is_its_pod(attempt, pod)
        )

    async def report_forged(self, attempt: PodAttempt, pod: Mapping[str, Any]) -> None:
        """Log a Pod that wears ``attempt``'s labels without being its Pod, and tell the hooks
        once per Pod (by UID): the attempt's outcome never comes from it."""
        uid = pod_api.uid_of(pod) or ""
        if uid in self.forgeries_reported:
            return
        self.forgeries_reported.add(uid)
        metadata = pod.get("metadata") or {}
        log.warning(
            "run %s attempt %s: Pod %s/%s carries its labels but is not its Pod; ignored",
            attempt.run.id,
            attempt.run.attempt,
            metadata.get("namespace"),
            metadata.get("name"),
        )
        if self.hooks is None:
            return
        try:
            await self.hooks.forged(pod, attempt.run.id, attempt.run.attempt)
        except Exception:  # reporting is best effort; ignoring the Pod is what protects the run
            log.exception("could not report the forged Pod %s", metadata.get("name"))

    def deadline(self, attempt: PodAttempt, created_at: datetime) -> datetime:
        """When our own clock times the attempt out: ``timeoutSeconds`` (plus the slack) from
        the Pod's start, as the kubelet counts ``activeDeadlineSeconds``, so a Pod that waited
        for a node or its image still gets its whole timeout. Before it starts, the start
        timeout ends a Pod left Pending (``outcomes.classify``), so the backstop is its
        creation plus both timeouts."""
        timeout = timedelta(
            seconds=timeout_seconds(attempt.run) + self.settings.timeout_slack_seconds
        )
        if attempt.started_at is not None:
            return attempt.started_at + timeout
        return created_at + self.start_timeout(attempt) + timeout

    def start_timeout(self, attempt: PodAttempt) -> timedelta:
        seconds = attempt.context.start_timeout_seconds
        if seconds is None:
            return timedelta(seconds=self.settings.default_start_timeout_seconds)
        return timedelta(seconds=seconds)


class Phase:
    """A phase of the launcher's step, with the shared state under the names it uses."""

    def __init__(self, state: LaunchState) -> None:
        self._state = state
        self._pool = state.pool
        self._pods = state.pods
        self._settings = state.settings
        self._clock = state.clock
        self._hooks = state.hooks
        self._attempts = state.attempts

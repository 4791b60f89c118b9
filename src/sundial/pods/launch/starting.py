"""An attempt's Pod started: created once no older attempt's Pod of the run is alive, adopted
when it exists already, or refused (Pod Security, a ServiceAccount the namespace does not
allow, a template the apiserver rejects) with the run failed at once and the reason on it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from sundial.attempt import finishes
from sundial.pods import manifests, pod_api, pod_security
from sundial.pods.launch.attempt import PodAttempt, timeout_seconds
from sundial.pods.launch.ending import Ending
from sundial.pods.launch.state import LaunchState, Phase
from sundial.pods.outcomes import PodOutcome, PodState
from sundial.scheduling import failures
from sundial.store import pod_runs

__all__ = ["Starting"]

log = logging.getLogger("sundial.pod_launcher")

_PERMANENT_CREATE_STATUSES = frozenset({400, 422})


class Starting(Phase):
    """Creates (or adopts, or refuses) the Pod of every held attempt that has none yet."""

    def __init__(self, state: LaunchState, ending: Ending) -> None:
        super().__init__(state)
        self._ending = ending
        #: Namespace objects read for their Pod Security level: name -> (read at, body).
        self._namespaces: dict[str, tuple[datetime, Mapping[str, Any] | None]] = {}

    async def start_pending(self) -> None:
        starting = [a for a in self._attempts.values() if a.created_at is None]
        if starting:
            await asyncio.gather(*(self._start(attempt) for attempt in starting))

    async def _start(self, attempt: PodAttempt) -> None:
        """Create the attempt's Pod once no older attempt's Pod of the run is alive."""
        run_pods = []
        if attempt.look_first:
            run_pods = await self._pods.list(
                [attempt.namespace], f"{manifests.LABEL_RUN_ID}={attempt.run.id}"
            )
        older_alive = False
        for pod in run_pods:
            pod_attempt = pod_api.attempt_of(pod)
            if pod_attempt == attempt.run.attempt:
                if pod["metadata"].get("name") != attempt.pod_name:
                    await self._state.report_forged(attempt, pod)
                    continue
                if not self._made_by_us(attempt, pod):
                    await self._state.report_forged(attempt, pod)
                    if attempt.pod_recorded:
                        continue  # ours was created, then deleted: gone, below
                    await self._refuse(
                        attempt,
                        "PodNameTaken",
                        f"a Pod named {attempt.pod_name} exists in namespace"
                        f" {attempt.namespace} that Sundial did not create for this attempt:"
                        " the run cannot have its Pod under that name",
                    )
                    return
                self._adopt_pod(attempt, pod)
                return
            if pod_attempt < attempt.run.attempt and not pod_api.ended(pod):
                older_alive = True
                log.info(
                    "run %s: deleting the Pod of stale attempt %s", attempt.run.id, pod_attempt
                )
                await self._pods.delete(attempt.namespace, pod["metadata"]["name"])
        if attempt.pod_recorded:
            await self._adopt_gone_pod(attempt)
            return
        if older_alive:
            return  # created on a later step, once the old Pod has ended or is gone
        spec = manifests.LaunchSpec(
            run_id=attempt.run.id,
            attempt=attempt.run.attempt,
            fencing_token=attempt.run.fencing_token,
            job_id=str(attempt.run.job_id),
            job_namespace=attempt.namespace,
            job_name=attempt.context.job_name,
            handler=attempt.run.handler,
            template=attempt.context.pod_template,
            args=attempt.run.args if isinstance(attempt.run.args, Mapping) else {},
            idempotency_key=attempt.run.idempotency_key,
            fire_time=attempt.run.fire_time,
            run_at=attempt.run.run_at,
            timeout_seconds=timeout_seconds(attempt.run),
            oom_kills_before=attempt.context.oom_kills,
            oom_memory_increase_percent=attempt.context.oom_memory_increase_percent,
            oom_max_memory_bytes=attempt.context.oom_max_memory_bytes,
            owner=await self._owner(attempt),
            launch_id=attempt.launch_id,
        )
        attempt.owner = spec.owner
        manifest = manifests.pod_manifest(spec, self._settings.manifest)
        refusal = await self._pod_security_refusal(attempt.namespace, manifest["spec"])
        if refusal is not None:
            await self._refuse(attempt, "PodSecurity", refusal)
            return
        try:
            attempt.pod_uid = await self._pods.create(attempt.namespace, manifest)
        except ApiException as error:
            if error.status == 409:
                attempt.look_first = True  # it exists: adopted on the next step
                return
            if error.status == 403 and "error looking up service account" in str(error.body):
                account = manifest["spec"].get("serviceAccountName") or "default"
                await self._refuse(
                    attempt,
                    "ServiceAccountMissing",
                    f"the ServiceAccount {account!r} of job Pods does not exist in namespace"
                    f" {attempt.namespace}: add the namespace to the chart's jobPods.namespaces"
                    f" (or watchNamespaces), or create {account!r} there with"
                    " automountServiceAccountToken: false",
                )
                return
            if error.status in _PERMANENT_CREATE_STATUSES or (
                error.status == 403 and "PodSecurity" in str(error.body)
            ):
                await self._reject(attempt, error)
                return
            log.warning("run %s: creating its Pod failed (%s); retrying", attempt.run.id, error)
            await self._fail_if_never_started(attempt)
            return
        attempt.created_at = self._clock.now()
        recorded = await pod_runs.record_pod(
            self._pool,
            self._settings.worker,
            attempt.run.id,
            attempt.run.attempt,
            pod_name=attempt.pod_name,
            pod_uid=attempt.pod_uid,
        )
        if not recorded:
            self._attempts.pop(attempt.run.id, None)
            await self._pods.delete(attempt.namespace, attempt.pod_name)

    async def _owner(
        self, attempt: PodAttempt, *, former: bool = False
    ) -> Mapping[str, Any] | None:
        if self._hooks is None:
            return None
        lookup = self._hooks.former_owner if former else self._hooks.owner
        try:
            return await lookup(
                attempt.namespace,
                attempt.context.job_name,
                str(attempt.run.job_id),
                attempt.run.idempotency_key,
            )
        except Exception:  # an owner reference is a convenience: launch without one
            log.exception("run %s: could not resolve the Pod's owner", attempt.run.id)
            return None

    async def _adopt_gone_pod(self, attempt: PodAttempt) -> None:
        """An adopted attempt whose Pod was created (the store recorded it) and is gone: it
        was deleted while no launcher watched. ``_observe`` ends it as a gone Pod, as if this
        launcher had seen it go; its owner is looked up again for ``_gone_with_owner``, since
        the ownerReference went with the Pod."""
        log.info(
            "run %s attempt %s: its Pod %s was deleted while the launcher was away",
            attempt.run.id,
            attempt.run.attempt,
            attempt.pod_name,
        )
        attempt.owner = await self._owner(attempt, former=True)
        attempt.created_at = self._clock.now()
        # A Pod made later under the same name is not this one: only the recorded UID is.
        attempt.pod_uid = attempt.recorded_uid

    def _made_by_us(self, attempt: PodAttempt, pod: Mapping[str, Any]) -> bool:
        """Whether ``pod``, under the attempt's own name in the run's namespace, is the Pod a
        launcher made for this attempt. A UID recorded with the name decides. Else the launch
        id this launcher annotated (a create whose answer was lost). Else, for an attempt taken
        over after a restart whose create was never recorded, the name is all there is."""
        uid = pod_api.uid_of(pod)
        if attempt.recorded_uid is not None:
            return uid == attempt.recorded_uid
        annotations = pod.get("metadata", {}).get("annotations") or {}
        if annotations.get(manifests.ANNOTATION_LAUNCH_ID) == attempt.launch_id:
            return True
        return attempt.adopted

    def _adopt_pod(self, attempt: PodAttempt, pod: Mapping[str, Any]) -> None:
        attempt.pod_uid = pod_api.uid_of(pod)
        references = pod.get("metadata", {}).get("ownerReferences") or ()
        attempt.owner = references[0] if references else None
        created = pod.get("metadata", {}).get("creationTimestamp")
        attempt.created_at = (
            datetime.fromisoformat(str(created).replace("Z", "+00:00"))
            if created
            else self._clock.now()
        )

    async def _pod_security_refusal(
        self, namespace: str, pod_spec: Mapping[str, Any]
    ) -> str | None:
        """Why the Pod may not be created in ``namespace`` (``pod_security``), or None. The
        namespace is read at most every ``namespace_ttl_seconds``; unreadable, it counts as
        unlabelled: restricted, and no other ServiceAccount."""
        now = self._clock.now()
        cached = self._namespaces.get(namespace)
        if (
            cached is None
            or (now - cached[0]).total_seconds() > self._settings.namespace_ttl_seconds
        ):
            try:
                body = await self._pods.namespace(namespace)
            except Exception:
                log.exception("could not read namespace %s; holding it to restricted", namespace)
                body = None
            cached = (now, body)
            self._namespaces[namespace] = cached
        level, problem = pod_security.level_of(cached[1])
        if problem is not None:
            log.warning("namespace %s: %s", namespace, problem)
        found = pod_security.violations(
            pod_spec,
            level,
            installation_service_account=self._settings.manifest.service_account_name,
            allowed_accounts=pod_security.allowed_service_accounts(cached[1]),
        )
        return pod_security.describe(found, level, namespace) if found else None

    async def _reject(self, attempt: PodAttempt, error: ApiException) -> None:
        await self._refuse(
            attempt, "PodRejected", f"the apiserver refused the Pod: {pod_api.api_message(error)}"
        )

    async def _refuse(self, attempt: PodAttempt, reason: str, message: str) -> None:
        """End the attempt's run failed (class ``permanent``: a retry would be refused the
        same way) without a Pod, with ``reason`` and ``message`` on the run."""
        log.warning("run %s: its Pod is refused: %s", attempt.run.id, message)
        self._attempts.pop(attempt.run.id, None)
        await pod_runs.record_pod(
            self._pool,
            self._settings.worker,
            attempt.run.id,
            attempt.run.attempt,
            pod_name=attempt.pod_name,
            pod_uid=attempt.pod_uid,
            reason=reason,
        )
        attempt.ended = PodOutcome(PodState.NEVER_STARTED, reason, message=message)
        outcome = finishes.failed(attempt.run, message, failures.FailureClass.PERMANENT)
        await self._ending.finish([(attempt, outcome, None)])

    async def _fail_if_never_started(self, attempt: PodAttempt) -> None:
        limit = self._state.start_timeout(attempt)
        if self._clock.now() - attempt.claimed_at > limit:
            outcome = PodOutcome(
                PodState.NEVER_STARTED,
                "StartTimeout",
                message=f"the Pod could not be created within {limit.total_seconds():.0f} s",
            )
            self._attempts.pop(attempt.run.id, None)
            attempt.ended = outcome
            await self._ending.end([(attempt, outcome)])

"""How a kubelet ends many deleted Pods at once, as the pod launcher sees it (docs/adr/0033).

Not a test: it prints figures. On the real node of a local cluster (started here as for
bench/pod_faults.py, and removed at exit), N Pods that ignore SIGTERM (``sleep``) and carry
the outcome finalizer are deleted at once with a grace period of 1 s. A watch records, per Pod:

* delete -> Failed: from the delete request until the kubelet's final status (phase Failed,
  the container's SIGKILL, 137) is seen; past the launcher's deletion slack the Pod is read
  as deleted without an exit code;
* Failed -> kubelet's delete: how long the final status still carries the first delete's
  record (``deletionGracePeriodSeconds`` 1) before the kubelet deletes the Pod again with a
  grace of 0 and ``deletionTimestamp`` moves past the container's end. A reader that comes
  later must have remembered the first delete request.

    .venv/bin/python bench/pod_deletions.py --pods 20
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import uuid

import pod_faults
import stack
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from sundial.localdev import real_node


def measure(pods: int) -> str:
    try:
        local, node = pod_faults.NODE.get()
    except pod_faults.Unavailable as error:
        return f"skipped: {error}"
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(local.kubeconfig)))
    namespace = f"deletions-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": namespace}})
    spec = {
        **real_node.placement(),
        "terminationGracePeriodSeconds": 1,
        "securityContext": {"runAsUser": 65532, "runAsGroup": 65532},
        "containers": [
            {"name": "main", "image": node.images["BUSYBOX"], "imagePullPolicy": "Never",
             "command": ["sleep", "600"]}
        ],
    }  # fmt: skip
    names = [f"p{i}" for i in range(pods)]
    for name in names:
        core.create_namespaced_pod(
            namespace, {"metadata": {"name": name, "finalizers": ["sundial.dev/pod-outcome"]},
                        "spec": spec},
        )  # fmt: skip
    running: set[str] = set()
    deleted: dict[str, float] = {}
    failed: dict[str, float] = {}
    overwritten: dict[str, float] = {}
    stream = watch.Watch()
    try:
        for event in stream.stream(core.list_namespaced_pod, namespace, timeout_seconds=300):
            pod, now = event["object"], time.monotonic()
            name = pod.metadata.name
            if pod.status.phase == "Running":
                running.add(name)
            if len(running) == pods and not deleted:
                for each in names:
                    deleted[each] = time.monotonic()
                    core.delete_namespaced_pod(each, namespace, grace_period_seconds=1)
            if pod.status.phase == "Failed":
                failed.setdefault(name, now)
                if pod.metadata.deletion_grace_period_seconds == 0 and name not in overwritten:
                    overwritten[name] = now
                    core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
            if len(overwritten) == pods:
                break
    finally:
        stream.stop()
        for name in names:
            with contextlib.suppress(ApiException):  # gone already
                core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
        core.delete_namespace(namespace)
    to_failed = sorted(failed[n] - deleted[n] for n in failed if n in deleted)
    window = sorted(overwritten[n] - failed[n] for n in overwritten)
    if not to_failed or not window:
        return f"incomplete: {len(failed)} Failed, {len(overwritten)} deleted again by the kubelet"
    return "\n".join(
        [
            f"{pods} Pods deleted at once (grace 1 s); load {stack.load_average()}",
            f"delete -> Failed seen: min {to_failed[0]:.2f} s, median"
            f" {statistics.median(to_failed):.2f} s, max {to_failed[-1]:.2f} s",
            f"Failed -> the kubelet's own delete (the first delete's record gone): min"
            f" {window[0]:.2f} s, median {statistics.median(window):.2f} s, max {window[-1]:.2f} s",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=20)
    print(measure(parser.parse_args().pods))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The README's quickstart works when pasted: its ```sh block is run by bash, as written.

It runs in a temporary cluster state directory (``SUNDIAL_CLUSTER_DIR``) so that it does not
meet the session's cluster, and the cluster is stopped afterwards whatever happened.

Its ``kubectl wait`` lines must wait, not fail, on CRDs whose status the apiserver has not
written yet (``conditions: null``, as a CRD is stored at creation). That moment is too short to
meet by chance, so an object of a probe kind with that very status stands in for such a CRD:
kubectl reads both alike, and the apiserver keeps the probe's status as written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sundial.localdev import cluster, crds
from support import crds as support_crds
from support import polling

REPOSITORY = Path(__file__).resolve().parents[2]
README_CRDS = "crd/scheduledjobs.sundial.dev crd/jobruns.sundial.dev"
PROBE_GROUP = "readme-probe.sundial.dev"


@pytest.fixture(autouse=True)
def _cluster_binaries_built() -> None:
    """Checked when the test starts, not at import: on a cold cache the binaries are built
    after collection (``tests/cluster/conftest.py``), and a mark evaluated at import skipped
    these tests on every first run."""
    if cluster.missing_binaries():
        pytest.skip("the local cluster's binaries are not built")


def quickstart() -> str:
    text = (REPOSITORY / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quickstart by hand", 1)[1].split("\n## ", 1)[0]
    [block] = re.findall(r"^```sh\n(.*?)^```", section, re.M | re.S)
    return block


def test_quickstart_runs_as_pasted(tmp_path: Path) -> None:
    environment = {**os.environ, "SUNDIAL_CLUSTER_DIR": str(tmp_path / "cluster")}
    environment.pop("KUBECONFIG", None)
    try:
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", quickstart()],
            cwd=REPOSITORY,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        subprocess.run(
            [str(REPOSITORY / "hack" / "cluster" / "down")],
            env=environment,
            capture_output=True,
            check=False,
        )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"^hello\s", result.stdout, re.M), result.stdout


def quickstart_waits() -> list[str]:
    """The quickstart's ``kubectl wait`` lines, in order."""
    waits = [line for line in quickstart().splitlines() if line.startswith("kubectl wait ")]
    assert waits and all(line.endswith(README_CRDS) for line in waits), waits
    return waits


@pytest.fixture
def probe_kind(kubectl: Callable[..., Any]) -> Iterator[tuple[str, str]]:
    """A served probe kind: its resource (``plural.group``) and its kind."""
    suffix = uuid.uuid4().hex[:8]
    definition = support_crds.open_definition(PROBE_GROUP, f"probes{suffix}", f"Probe{suffix}")
    kubectl("apply", "-f", "-", stdin=json.dumps(definition))
    resource = definition["metadata"]["name"]
    crds.wait_established(kubectl, [resource])
    try:
        yield resource, f"Probe{suffix}"
    finally:
        kubectl("delete", "crd", resource, "--wait=false")


def test_a_crd_is_stored_with_null_conditions(kubectl: Callable[..., Any]) -> None:
    """What makes the probe below stand for a CRD just applied: the apiserver's answer to the
    create is the CRD as stored, before its controllers have written any condition."""
    suffix = uuid.uuid4().hex[:8]
    definition = support_crds.open_definition(PROBE_GROUP, f"fresh{suffix}", f"Fresh{suffix}")
    created = json.loads(
        kubectl("create", "-o", "json", "-f", "-", stdin=json.dumps(definition)).stdout
    )
    try:
        assert "conditions" in created["status"]
        assert created["status"]["conditions"] is None
        assert not crds.established(created)
    finally:
        kubectl("delete", "crd", created["metadata"]["name"], "--wait=false")


def test_the_quickstart_waits_for_crds_whose_conditions_are_not_written_yet(
    kubectl: Callable[..., Any],
    local_cluster: cluster.LocalCluster,
    namespace: str,
    probe_kind: tuple[str, str],
    tmp_path: Path,
) -> None:
    resource, kind = probe_kind
    fresh = {
        "apiVersion": f"{PROBE_GROUP}/v1",
        "kind": kind,
        "metadata": {"name": "fresh", "namespace": namespace},
        "status": {
            "acceptedNames": {"kind": "", "plural": ""},
            "conditions": None,
            "storedVersions": ["v1"],
        },
    }
    kubectl("create", "-f", "-", stdin=json.dumps(fresh))
    stored = json.loads(kubectl("get", resource, "fresh", "-n", namespace, "-o", "json").stdout)
    assert stored["status"]["conditions"] is None  # as a CRD just applied
    # -v=6 logs when kubectl has read the object and is waiting on its watch.
    script = "\n".join(
        line.replace(README_CRDS, f"-v=6 -n {namespace} {resource}/fresh")
        for line in quickstart_waits()
    )
    log = tmp_path / "wait.log"
    environment = {
        **os.environ,
        "KUBECONFIG": str(local_cluster.kubeconfig),
        "PATH": f"{local_cluster.kubectl_path.parent}{os.pathsep}{os.environ['PATH']}",
    }
    with log.open("w") as sink:
        waiting = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            env=environment,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )

    def watching(count: int) -> bool:
        text = log.read_text()
        return waiting.poll() is not None or text.count("Caches populated") >= count

    def patch_status(patch: dict[str, Any]) -> None:
        kubectl(
            "patch", resource, "fresh", "-n", namespace, "--type=merge", "-p", json.dumps(patch)
        )

    def still_waiting(after: str) -> None:
        try:
            exited = waiting.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return
        pytest.fail(f"kubectl wait exited {exited} {after}:\n{log.read_text()[-3000:]}")

    try:
        polling.wait_until(lambda: watching(1), what="kubectl wait reading the object")
        still_waiting("on conditions: null")  # the old single line failed here, at once
        # What the naming controller writes first: NamesAccepted, and Established still False.
        not_yet = [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": "False", "reason": "Installing"},
        ]
        patch = {"status": {"conditions": not_yet}}
        patch_status(patch)
        polling.wait_until(lambda: watching(2), what="the second kubectl wait reading it")
        still_waiting("before Established=True")
        patch["status"]["conditions"][1] = {"type": "Established", "status": "True"}
        patch_status(patch)
        assert waiting.wait(timeout=120) == 0, log.read_text()[-3000:]
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()

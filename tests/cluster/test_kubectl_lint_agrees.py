"""``kubectl sundial lint`` against the real API server: the same objects refused, in the same
words. Each case is linted offline and applied with ``kubectl apply --dry-run=server``; the
oracle is the API server (OpenAPI schema, CEL, strict field validation)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.crds import apply_sundial_crds

REPOSITORY = Path(__file__).resolve().parents[2]
PLUGIN = Path(sys.executable).parent / "kubectl-sundial"

JOB: dict[str, Any] = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "ScheduledJob",
    "metadata": {"name": "nightly"},
    "spec": {"schedule": "0 2 * * *", "handler": {"name": "etl.run"}},
}
RUN: dict[str, Any] = {
    "apiVersion": "sundial.dev/v1alpha1",
    "kind": "JobRun",
    "metadata": {"name": "once"},
    "spec": {"job": {"handler": {"name": "etl.run"}}},
}


def changed(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(base)
    for key, value in spec.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


CASES = {
    "good job": JOB,
    "good run": RUN,
    "no schedule": changed(JOB, schedule=None),
    "suspend is a string": changed(JOB, suspend="yes"),
    "unknown policy": changed(JOB, concurrencyPolicy="Sometimes"),
    "spread too large": changed(JOB, spreadSeconds=4000),
    "queue too long": changed(JOB, queue="q" * 100),
    "unknown field": changed(JOB, colour="red"),
    "maxBackfill without Backfill": changed(JOB, maxBackfill=3),
    "both jobRef and job": changed(RUN, jobRef={"name": "nightly"}),
    "runAt and delay": changed(RUN, runAt="2026-12-01T00:00:00Z", delaySeconds=5),
    "dependsOn twice": changed(RUN, dependsOn=["a", "a"]),
    "bad runAt": changed(RUN, runAt="tomorrow"),
}


@pytest.fixture(scope="module")
def crds(kubectl: Any) -> None:
    apply_sundial_crds(kubectl, REPOSITORY / "crds")


@pytest.mark.parametrize("case", list(CASES))
def test_lint_refuses_what_the_api_server_refuses_in_its_words(
    crds: None, kubectl: Any, namespace: str, tmp_path: Path, case: str
) -> None:
    manifest = tmp_path / "object.json"
    manifest.write_text(json.dumps(CASES[case]))
    server = kubectl("apply", "-n", namespace, "--dry-run=server", "-f", str(manifest), check=False)
    linted = subprocess.run(
        [str(PLUGIN), "lint", "-f", str(manifest)], capture_output=True, text=True, check=False
    )
    refused = server.returncode != 0
    assert (linted.returncode == 1) == refused, (linted.stdout, server.stderr)
    for line in linted.stdout.splitlines():
        if refused:
            message = line.split(": ", 2)[2]
            assert message in server.stderr, (message, server.stderr)

"""The Dockerfiles of operator/ and runner/ agree with what the Pods and the chart assume.

The unit tier builds no image (``hack/images/build`` does, with buildah, for the real-node
tier); these checks hold, without a build, the parts a cluster would refuse at run time: a Pod
with ``runAsNonRoot`` only starts an image whose USER is a numeric non-zero UID, and a handler
Pod's command (``sundial exec HANDLER``) must be on PATH.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest

from sundial.pods import manifests

ROOT = pathlib.Path(__file__).resolve().parents[3]


def final_stage(dockerfile: pathlib.Path) -> list[str]:
    """The instructions after the last FROM, continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", dockerfile.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    instructions = [line for line in lines if line and not line.startswith("#")]
    last_from = max(i for i, line in enumerate(instructions) if line.startswith("FROM "))
    return instructions[last_from:]


def instruction(stage: list[str], name: str) -> str:
    found = [line[len(name) + 1 :] for line in stage if line.startswith(f"{name} ")]
    assert found, f"the final stage has no {name}"
    return found[-1]


@pytest.mark.parametrize(("image", "command"), [("runner", "runner"), ("operator", "operator")])
def test_final_stage_is_a_numeric_non_root_user_running_sundial(image: str, command: str) -> None:
    stage = final_stage(ROOT / image / "Dockerfile")
    user, _, group = instruction(stage, "USER").partition(":")
    assert user.isdigit() and int(user) != 0, "runAsNonRoot needs a numeric, non-zero UID"
    assert not group or group.isdigit()
    assert json.loads(instruction(stage, "ENTRYPOINT")) == ["sundial"]
    assert json.loads(instruction(stage, "CMD")) == [command]
    assert "/opt/sundial/bin" in instruction(stage, "ENV").split("PATH=")[1].split()[0]


def test_handler_pod_command_is_the_runner_image_entrypoint() -> None:
    spec = manifests.LaunchSpec(
        run_id=1,
        attempt=1,
        job_id="4f1c2b7e-0000-4000-8000-000000000001",
        job_namespace="default",
        job_name="echo",
        handler="reports.build",
        template={},
        args={},
        idempotency_key="run:1",
        fire_time=None,
        timeout_seconds=60,
    )
    manifest = manifests.pod_manifest(spec, manifests.ManifestSettings())
    (container,) = manifest["spec"]["containers"]
    entrypoint = json.loads(instruction(final_stage(ROOT / "runner" / "Dockerfile"), "ENTRYPOINT"))
    assert container["command"][: len(entrypoint)] == entrypoint
    assert container["command"][1:] == ["exec", "reports.build"]


def test_build_context_holds_what_the_dockerfiles_copy() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    for image in ("runner", "operator"):
        text = (ROOT / image / "Dockerfile").read_text(encoding="utf-8")
        for sources in re.findall(r"^COPY (?!--from)(.+) \S+$", text, flags=re.MULTILINE):
            for source in sources.split():
                assert source.rstrip("/") in allowed, f"{image}: {source} is not in the context"
                assert (ROOT / source).exists()

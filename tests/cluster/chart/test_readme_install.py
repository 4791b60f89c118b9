"""The README's install section, as a user pastes it: the Secret it makes is the one the chart
reads, and its `helm install` line, run against the chart packaged as a release packages it
(``make dist``), renders an installation with the user's handler image as the runner.

The commands are read from the README itself, so a change to either the README or the chart
that breaks the pasted commands fails here. (It renders with ``helm template`` and the same
flags: the local cluster's one real node runs the e2e installation.)"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.localdev import dist
from support.chart import RENDER_FOR_THE_TEST_CLUSTER, REPOSITORY

README = REPOSITORY / "README.md"


def _install_commands() -> list[list[str]]:
    """Every shell command in the README's Install section's ``sh`` blocks, split as a shell
    splits them (continuation lines joined, comments dropped)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Install\n", 1)[1].split("\n## ", 1)[0]
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", section, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words)
    return commands


def _command(*words: str) -> list[str]:
    """The one command of the Install section that has ``words``, in this order."""
    found = [
        command
        for command in _install_commands()
        if any(command[i : i + len(words)] == list(words) for i in range(len(command)))
    ]
    assert len(found) == 1, f"the README's Install section has no single {' '.join(words)}"
    return found[0]


def _option(words: list[str], name: str) -> str:
    for index, word in enumerate(words):
        if word == name:
            return words[index + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    raise AssertionError(f"{' '.join(words)} has no {name}")


@pytest.fixture(scope="module")
def packaged(helm_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dist.package_chart(tmp_path_factory.mktemp("dist"), dist.version(), helm=helm_binary)


def test_the_readmes_helm_install_renders_with_the_packaged_chart(
    helm: Callable[..., Any], packaged: Path
) -> None:
    words = _command("helm", "install")
    release, chart = words[2], words[3]
    # The file `make dist` writes for this version, named as the README names it.
    assert chart == f"dist/{packaged.name}", (
        f"the README installs {chart}, make dist writes {packaged.name}"
    )
    flags = words[4:]
    namespace = _option(flags, "--namespace")
    rendered = helm("template", release, str(packaged), *flags, *RENDER_FOR_THE_TEST_CLUSTER).stdout
    objects = [document for document in yaml.safe_load_all(rendered) if document]
    workloads = [o for o in objects if o["kind"] in {"Deployment", "Job", "Secret"}]
    assert workloads and {o["metadata"].get("namespace") for o in workloads} == {namespace}

    runner = next(
        o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"].endswith("runner")
    )
    image = runner["spec"]["template"]["spec"]["containers"][0]["image"]
    repository = _option(flags, "--set").split("=", 1)[1]
    tag = _option(flags, "--set-string").split("=", 1)[1]
    assert image == f"{repository}:{tag}"


def test_the_readmes_secret_is_the_one_the_chart_reads(
    helm: Callable[..., Any], packaged: Path
) -> None:
    secret = _command("create", "secret", "generic")
    name = secret[secret.index("generic") + 1]
    namespace = _option(secret, "-n")
    key = _option(secret, "--from-literal").split("=", 1)[0]
    install = _command("helm", "install")
    assert _option(install[4:], "--namespace") == namespace
    rendered = helm(
        "template", install[2], str(packaged), *install[4:], *RENDER_FOR_THE_TEST_CLUSTER
    ).stdout
    references = {
        (env["valueFrom"]["secretKeyRef"]["name"], env["valueFrom"]["secretKeyRef"]["key"])
        for o in yaml.safe_load_all(rendered)
        if o and o["kind"] in {"Deployment", "Job"}
        for container in o["spec"]["template"]["spec"].get("initContainers", [])
        + o["spec"]["template"]["spec"]["containers"]
        for env in container.get("env", [])
        if env["name"] == "SUNDIAL_DSN"
    }
    assert references == {(name, key)}, references

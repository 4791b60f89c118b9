"""Every manifest in examples/ and in the docs is accepted by a real apiserver with the CRDs.

Each file of ``examples/`` (recursively) and each ```` ```yaml ```` block of ``README.md`` and
``docs/*.md`` that holds a Kubernetes object is applied with a server-side dry run into a fresh
namespace, after ``crds/`` is applied and Established: the schema, the CEL rules and the
defaults all run, nothing is stored. examples/demo is also applied for real and reconciled by
``tests/cluster/test_demo.py``. An Argo CD ``Application`` cannot be applied here (Argo CD's
CRDs are not installed); what it would do is rendered instead: ``helm template`` of the chart
path it names, with its ``valuesObject``, must succeed.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sundial.localdev import cluster
from support.chart import RENDER_FOR_THE_TEST_CLUSTER
from support.crds import apply_sundial_crds

REPOSITORY = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.M | re.S)


def documented_manifests() -> list[tuple[str, str]]:
    found = [
        (str(path.relative_to(REPOSITORY)), path.read_text(encoding="utf-8"))
        for path in sorted((REPOSITORY / "examples").rglob("*.yaml"))
    ]
    for page in [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").glob("*.md"))]:
        for number, match in enumerate(_BLOCK.finditer(page.read_text(encoding="utf-8"))):
            documents = [d for d in yaml.safe_load_all(match.group(1)) if isinstance(d, dict)]
            if documents and all("apiVersion" in d and "kind" in d for d in documents):
                found.append((f"{page.relative_to(REPOSITORY)}#{number}", match.group(1)))
    return found


MANIFESTS = documented_manifests()


def test_the_examples_and_the_docs_hold_manifests() -> None:
    names = {name.split("#")[0] for name, _ in MANIFESTS}
    assert "examples/demo/oom.yaml" in names
    assert "examples/scheduledjob-pod.yaml" in names
    assert "README.md" in names, "the README's quickstart manifest is not found"


@pytest.fixture(scope="module")
def crds_installed(kubectl: Callable[..., Any]) -> None:
    apply_sundial_crds(kubectl, REPOSITORY / "crds")


@pytest.mark.parametrize(("name", "text"), MANIFESTS, ids=[name for name, _ in MANIFESTS])
def test_manifest_is_accepted_by_the_apiserver(
    name: str,
    text: str,
    kubectl: Callable[..., Any],
    namespace: str,
    crds_installed: None,
    tmp_path: Path,
) -> None:
    documents = [d for d in yaml.safe_load_all(text) if d]
    if all(d["kind"] == "Application" for d in documents):
        for application in documents:
            _render_application(application, tmp_path)
        return
    result = kubectl(
        "apply", "--dry-run=server", "--server-side", "-n", namespace, "-f", "-",
        stdin=text, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"{name} is rejected: {result.stderr}"
    applied = [line for line in result.stdout.splitlines() if "serverside-applied" in line]
    assert len(applied) == len(documents), result.stdout


def _render_application(application: dict[str, Any], tmp_path: Path) -> None:
    source = application["spec"]["source"]
    chart = REPOSITORY / source["path"]
    assert (chart / "Chart.yaml").is_file(), f"the Application names {source['path']}"
    values = tmp_path / "values.json"
    values.write_text(json.dumps(source.get("helm", {}).get("valuesObject", {})))
    result = subprocess.run(
        [
            str(cluster.bin_dir() / "helm"), "template", application["metadata"]["name"],
            str(chart), "--namespace", application["spec"]["destination"]["namespace"],
            "--values", str(values), *RENDER_FOR_THE_TEST_CLUSTER,
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "kind: Deployment" in result.stdout

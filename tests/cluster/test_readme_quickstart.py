"""The README's quickstart works when pasted: its ```sh block is run by bash, as written.

It runs in a temporary cluster state directory (``SUNDIAL_CLUSTER_DIR``) so that it does not
meet the session's cluster, and the cluster is stopped afterwards whatever happened.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from sundial.localdev import cluster

REPOSITORY = Path(__file__).resolve().parents[2]


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

"""The previous release for the upgrade story: checked out from this repository's history and
removed afterwards; a clone without the commit is refused with what to do."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from sundial.localdev import previous_release

ROOT = Path(__file__).resolve().parents[3]


def test_the_previous_release_is_checked_out_and_removed_afterwards() -> None:
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{previous_release.PREVIOUS}^{{commit}}"],
        check=False,
    )
    if known.returncode != 0:
        pytest.skip("this clone lacks the previous release's commit (a shallow clone)")
    with previous_release.checkout(ROOT) as directory:
        chart = yaml.safe_load((previous_release.chart_dir(directory) / "Chart.yaml").read_text())
        head = subprocess.run(
            ["git", "-C", str(directory), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
        assert chart["name"] == "sundial"
        assert head == previous_release.PREVIOUS
    assert not directory.exists()
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert str(directory) not in listed


def test_a_clone_without_the_commit_is_refused_saying_so(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    refused = pytest.raises(previous_release.PreviousReleaseError, match="has no commit deca353")
    with refused, previous_release.checkout(tmp_path):
        pass

"""The previous release of Sundial, for the upgrade story: a pinned commit of main, checked out
beside this checkout (``git worktree``), with its images built by its own
``hack/images/build`` and its own chart. Installing it and then upgrading to this checkout is
what a platform team does with two releases; docs/operations.md ("Upgrading") names the commit.

The images are cached by content like this checkout's, so only the first run on a machine
builds them. A shallow clone lacks the commit: :func:`checkout` then raises, saying so.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from sundial.localdev import cluster
from sundial.localdev import real_node as real_nodes

__all__ = ["PREVIOUS", "PreviousReleaseError", "chart_dir", "checkout", "images"]

#: main on 2026-12-06 (its CI passed): before migration 0330 and the tenancy and claim changes
#: that came after it.
PREVIOUS = "deca3535f34b3d15eb510789a8388d8b9b65d2b4"


class PreviousReleaseError(cluster.ClusterError):
    """The previous release could not be checked out or built."""


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
    )


def available(root: Path | None = None) -> bool:
    """Whether this clone holds :data:`PREVIOUS` (a shallow clone does not)."""
    root = root or cluster.find_hack_dir().parents[1]
    return _git(root, "cat-file", "-e", f"{PREVIOUS}^{{commit}}").returncode == 0


@contextlib.contextmanager
def checkout(root: Path | None = None) -> Iterator[Path]:
    """A worktree of :data:`PREVIOUS` in a temporary directory, removed afterwards."""
    root = root or cluster.find_hack_dir().parents[1]
    if not available(root):
        shallow = _git(root, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
        raise PreviousReleaseError(
            f"{root} has no commit {PREVIOUS[:7]} (the previous release)"
            + (": it is a shallow clone; clone with full history" if shallow else "")
        )
    parent = Path(tempfile.mkdtemp(prefix="sundial-previous-"))
    directory = parent / "sundial"
    added = _git(root, "worktree", "add", "--detach", str(directory), PREVIOUS)
    if added.returncode != 0:
        shutil.rmtree(parent, ignore_errors=True)
        raise PreviousReleaseError(f"git worktree add failed: {added.stderr.strip()}")
    try:
        yield directory
    finally:
        _git(root, "worktree", "remove", "--force", str(directory))
        shutil.rmtree(parent, ignore_errors=True)
        _git(root, "worktree", "prune")


def chart_dir(directory: Path) -> Path:
    return directory / "charts" / "sundial"


def images(directory: Path, *, log_path: Path) -> Path:
    """The env file of the previous release's ``operator`` and ``examples`` images (and what
    they build on, and the sandbox image ``pause`` that a real node's import needs), built by
    its own ``hack/images/build`` where the cache lacks them."""
    build = directory / "hack" / "images" / "build"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        result = subprocess.run(
            [str(build), "pause", "operator", "examples"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=directory,
            check=False,
        )
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        tail = log_path.read_text()[-2000:]
        raise PreviousReleaseError(
            f"the previous release's images did not build (exit {result.returncode}); "
            f"see {log_path}:\n{tail}"
        )
    env_file = Path(lines[-1])
    missing = {"OPERATOR", "EXAMPLES"} - set(real_nodes.read_images(env_file))
    if missing:
        raise PreviousReleaseError(f"{env_file} names no image {', '.join(sorted(missing))}")
    return env_file

"""The local Kubernetes control plane of ``hack/cluster``, driven from Python.

Machines here have no Docker engine, so kind cannot run; Sundial's Kubernetes behaviour is
proven on a real kube-apiserver, controller-manager and scheduler built from Kubernetes' own
Go modules, with kwok simulating Nodes and Pod lifecycles. The shell scripts in
``hack/cluster`` do the work (``build``, ``up``, ``down``); this module finds them in the
source checkout, says clearly what is missing, and hands back a :class:`LocalCluster`.

Guarantees: nothing outside the given state directory and the binary cache
(``$XDG_CACHE_HOME/sundial/cluster``) is written, ``~/.kube`` is never read or touched,
and every process listens on 127.0.0.1 only. Used by the tests and the demo, never in
production.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sundial import errors as sundial_errors

__all__ = [
    "ClusterError",
    "GoNotFoundError",
    "LocalCluster",
    "build",
    "find_go",
    "find_hack_dir",
    "missing_binaries",
    "start",
]

GO_INSTALL_HINT = (
    "Go 1.25 or newer is needed to build the local Kubernetes control plane once "
    "(10 to 20 minutes on two cores, cached afterwards): install it from https://go.dev/dl/ "
    "(e.g. into /usr/local/go) or set GO=/path/to/go. "
    "Or point SUNDIAL_TEST_KUBECONFIG at an existing cluster such as kind."
)


class ClusterError(sundial_errors.SundialError, RuntimeError):
    """The local control plane could not be built, started or stopped."""


class GoNotFoundError(ClusterError):
    """The binaries are not cached and there is no Go toolchain to build them."""


def find_hack_dir() -> Path:
    """Return the ``hack/cluster`` directory of the source checkout.

    ``SUNDIAL_HACK_CLUSTER_DIR`` wins; otherwise the checkout this module lives in
    (an editable install, as ``make venv`` makes).
    """
    explicit = os.environ.get("SUNDIAL_HACK_CLUSTER_DIR")
    if explicit:
        return Path(explicit)
    candidate = Path(__file__).resolve().parents[3] / "hack" / "cluster"
    if not (candidate / "up").is_file():
        raise ClusterError(
            f"hack/cluster not found at {candidate}: use a source checkout with an "
            "editable install (`make venv`) or set SUNDIAL_HACK_CLUSTER_DIR"
        )
    return candidate


def find_go() -> Path | None:
    """Return the Go toolchain: ``$GO``, then ``go`` on the PATH, then /usr/local/go.

    A ``$GO`` that names no executable means "no Go" (``GO=none`` shows the skip path).
    """
    explicit = os.environ.get("GO")
    if explicit:
        return Path(explicit) if os.access(explicit, os.X_OK) else None
    on_path = shutil.which("go")
    if on_path:
        return Path(on_path)
    default = Path("/usr/local/go/bin/go")
    return default if default.is_file() else None


def _lib_value(hack_dir: Path, expression: str) -> str:
    result = subprocess.run(
        ["bash", "-c", f'. "$0/lib.sh" && {expression}', str(hack_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def bin_dir(hack_dir: Path | None = None) -> Path:
    """The cache directory holding the pinned binaries (they may not be built yet)."""
    return Path(_lib_value(hack_dir or find_hack_dir(), 'echo "$CLUSTER_BIN_DIR"'))


def missing_binaries(hack_dir: Path | None = None) -> list[str]:
    """Names of the pinned binaries not yet in the cache."""
    return _lib_value(hack_dir or find_hack_dir(), "cluster_binaries_missing").split()


def build(*, log_path: Path, hack_dir: Path | None = None) -> Path:
    """Build whatever binaries are missing (``hack/cluster/build``); return the bin dir.

    The build's output goes to ``log_path``. Raises :class:`GoNotFoundError` when
    something must be built and no Go toolchain exists.
    """
    hack_dir = hack_dir or find_hack_dir()
    if not missing_binaries(hack_dir):
        return bin_dir(hack_dir)
    go = find_go()
    if go is None:
        raise GoNotFoundError(GO_INSTALL_HINT)
    environment = {**os.environ, "GO": str(go)}
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        result = subprocess.run(
            [str(hack_dir / "build")], stdout=log, stderr=log, env=environment, check=False
        )
    if result.returncode != 0:
        tail = log_path.read_text()[-3000:]
        raise ClusterError(f"hack/cluster/build failed; see {log_path}:\n{tail}")
    return bin_dir(hack_dir)


@dataclass(frozen=True)
class LocalCluster:
    """A running control plane: its admin kubeconfig and the kubectl to use with it."""

    kubeconfig: Path
    kubectl_path: Path
    state_dir: Path | None = None
    hack_dir: Path | None = None

    def kubectl(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; raise :class:`ClusterError` on failure."""
        result = subprocess.run(
            [str(self.kubectl_path), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        if check and result.returncode != 0:
            raise ClusterError(
                f"kubectl {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}"
            )
        return result

    def stop(self) -> None:
        """Stop the processes and remove the state directory (no-op for adopted clusters)."""
        if self.state_dir is None or self.hack_dir is None:
            return
        _run_script(self.hack_dir / "down", self.state_dir)


def _run_script(
    script: Path, state_dir: Path, extra_environment: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        env={**os.environ, "SUNDIAL_CLUSTER_DIR": str(state_dir), **(extra_environment or {})},
        check=False,
    )
    if result.returncode != 0:
        raise ClusterError(
            f"{script} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result


def start(
    state_dir: Path,
    *,
    owner_pid: int | None = None,
    hack_dir: Path | None = None,
    environment: dict[str, str] | None = None,
) -> LocalCluster:
    """Start a cluster whose state lives in ``state_dir`` (binaries must be built).

    With ``owner_pid``, a watchdog stops the cluster once that process has gone, even if
    it died without calling :meth:`LocalCluster.stop`. ``environment`` is passed to ``up``
    (``SUNDIAL_REAL_NODE=1`` and ``SUNDIAL_IMAGES_ENV`` ask for a real node).
    """
    hack_dir = hack_dir or find_hack_dir()
    if missing_binaries(hack_dir):
        raise ClusterError("the cluster binaries are not built: call build() first")
    owner = {"SUNDIAL_CLUSTER_OWNER_PID": str(owner_pid)} if owner_pid else {}
    result = _run_script(hack_dir / "up", state_dir, {**(environment or {}), **owner})
    kubeconfig = Path(result.stdout.strip().splitlines()[-1])
    return LocalCluster(
        kubeconfig=kubeconfig,
        kubectl_path=bin_dir(hack_dir) / "kubectl",
        state_dir=state_dir,
        hack_dir=hack_dir,
    )

"""``kubectl sundial`` installed alone, as a user without the server installs it: from the krew
archive ``make dist`` builds, whose launcher installs the plugin's wheel into an environment of
its own on first use. There every command loads and works without kopf, psycopg or
prometheus-client, which that environment does not have (aiohttp it may have: recent
kubernetes clients bring it)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from sundial.localdev import dist, plugin_dist

pytestmark = pytest.mark.timeout(600)

SERVER_ONLY = ("kopf", "psycopg", "psycopg_pool", "prometheus_client")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("dist")
    return plugin_dist.build(out, root=dist.ROOT, semver="9.9.9-test0")


def _base_python() -> str:
    """The interpreter this environment was made from (a venv's ``base_prefix``)."""
    name = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(Path(sys.base_prefix) / "bin" / name)


def test_the_krew_archive_installs_a_plugin_that_works_without_the_server(
    built: list[Path], tmp_path: Path
) -> None:
    wheel, archive, manifest = built
    plugin = yaml.safe_load(manifest.read_text())
    [platform] = plugin["spec"]["platforms"]
    assert platform["uri"].endswith(f"/releases/download/v{dist.version()}/{archive.name}")
    assert platform["sha256"] == dist._sha256(archive)
    assert plugin["spec"]["version"] == "v9.9.9-test0"
    installed = tmp_path / "krew-store"
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == sorted(["LICENSE", "kubectl-sundial", wheel.name])
        tar.extractall(installed, filter="data")
    # krew puts a symlink to the plugin's bin on the PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / platform["bin"]).symlink_to(installed / platform["bin"])
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "SUNDIAL_PYTHON": _base_python(),
        "KUBECONFIG": str(tmp_path / "no-such-kubeconfig"),
    }

    def plugin_run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl-sundial", *args], env=env, capture_output=True, text=True, timeout=300
        )

    version = plugin_run("version", "--client")
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"Client Version: {dist.version()}"

    # Its environment has none of the server's packages, and every module of the plugin loads.
    venv_python = tmp_path / "cache" / "kubectl-sundial" / dist.version() / "bin" / "python"
    probe = (
        "import importlib, importlib.util, pkgutil, sys\n"
        f"missing = [m for m in {SERVER_ONLY!r} if importlib.util.find_spec(m) is None]\n"
        "import sundial.kubectl_plugin as p\n"
        "for info in pkgutil.iter_modules(p.__path__):\n"
        "    importlib.import_module(f'sundial.kubectl_plugin.{info.name}')\n"
        "print(len(missing))\n"
    )
    loaded = subprocess.run(
        [str(venv_python), "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip() == str(len(SERVER_ONLY))

    # A command that needs no cluster works from it: lint the repository's examples.
    examples = sorted(str(path) for path in (dist.ROOT / "examples").glob("*.yaml"))
    linted = plugin_run("lint", *(a for path in examples for a in ("-f", path)))
    assert linted.returncode == 0, linted.stdout + linted.stderr
    # One that needs a cluster says what is missing.
    listed = plugin_run("get", "scheduledjobs")
    assert listed.returncode != 0 and "kubeconfig" in listed.stderr.lower(), listed.stderr

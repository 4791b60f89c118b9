"""``kubectl sundial`` on its own, for a laptop: what ``make dist`` builds of it.

The plugin needs the API models, the schedule arithmetic and a Kubernetes client, not the
server's kopf, psycopg or prometheus-client. ``sundial-scheduler`` brings those
(its images need them), so a user who only wants the plugin installs a second distribution,
``kubectl-sundial``: the plugin's modules (``PACKAGES`` and ``MODULES``, the closure of what
it imports; a test imports every command of it where the server's packages are missing) and
the dependencies they need, taken with their bounds from ``pyproject.toml``, so the two never
disagree. Install it in its own environment (``pipx install kubectl-sundial``): it holds some
of the same files as ``sundial-scheduler``, so the two do not belong in one environment.

For krew, the plugin manager most kubectl users have, ``krew/`` holds an archive (the wheel
and a launcher script, ``kubectl-sundial``, which installs the wheel into an environment of its
own under ``~/.cache`` on first use, with the ``python3`` it finds) and the manifest naming it
by the URL a GitHub release serves and its SHA-256.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from sundial.localdev import pyproject

__all__ = [
    "DEPENDENCIES",
    "DISTRIBUTION",
    "MODULES",
    "PACKAGES",
    "build",
    "krew_manifest",
]

DISTRIBUTION = "kubectl-sundial"
#: Whole packages of ``src/sundial`` the plugin imports.
PACKAGES = ("api", "kubectl_plugin", "scheduling")
#: Single modules of ``src/sundial`` it imports (``sundial`` itself imports the runner's
#: registry and context for ``@sundial.job``, which have no server dependency).
MODULES = ("__init__.py", "errors.py", "py.typed", "runner/__init__.py", "runner/context.py",
           "runner/registry.py")  # fmt: skip
#: Of the project's dependencies, the plugin's.
DEPENDENCIES = ("click", "croniter", "kubernetes", "pydantic", "PyYAML", "tzdata")

_LAUNCHER = """\
#!/bin/sh
# kubectl sundial, as krew installs it: the plugin runs from a Python environment of its own,
# made from the wheel beside this script the first time it runs (python3 3.11 or newer, or the
# interpreter named by SUNDIAL_PYTHON; pip downloads its dependencies then).
set -eu
python=${SUNDIAL_PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "kubectl sundial needs Python 3.11 or newer as '$python':" \\
        "install it, or set SUNDIAL_PYTHON to one" >&2
    exit 1
fi
here=$("$python" -c 'import os, sys; print(os.path.dirname(os.path.realpath(sys.argv[1])))' "$0")
wheel="$here/WHEEL_NAME"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/kubectl-sundial/VERSION"
if [ ! -f "$venv/.installed" ]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" >&2; then
        rm -rf "$venv"
        echo "kubectl sundial: installing its Python packages failed (above);" \\
            "the next run tries again" >&2
        exit 1
    fi
    touch "$venv/.installed"
fi
exec "$venv/bin/kubectl-sundial" "$@"
"""


def _requirements(project: dict[str, object]) -> list[str]:
    """The project's requirement strings for ``DEPENDENCIES``, as pyproject bounds them."""
    wanted = {name.lower(): name for name in DEPENDENCIES}
    found = {}
    for requirement in project["dependencies"]:  # type: ignore[attr-defined]
        name = re.split(r"[\[<>=!~; ]", str(requirement), maxsplit=1)[0].lower()
        if name in wanted:
            found[name] = str(requirement)
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise SystemExit(f"make dist: pyproject.toml no longer depends on {missing}")
    return [found[name] for name in sorted(found)]


def _pyproject(project: dict[str, object]) -> str:
    requirements = "".join(f'    "{r}",\n' for r in _requirements(project))
    return f"""[build-system]
requires = ["setuptools>=77", "wheel"]
build-backend = "setuptools.build_meta"

[project]
name = "{DISTRIBUTION}"
version = "{project["version"]}"
description = "kubectl sundial: run, wait for, list and read Sundial's scheduled jobs."
readme = "README.md"
requires-python = "{project["requires-python"]}"
license = "Apache-2.0"
license-files = ["LICENSE"]
dependencies = [
{requirements}]

[project.scripts]
kubectl-sundial = "sundial.kubectl_plugin.main:main"
kubectl_complete-sundial = "sundial.kubectl_plugin.main:complete"

[tool.setuptools]
include-package-data = false

[tool.setuptools.packages.find]
where = ["src"]

[tool.setuptools.package-data]
"sundial" = ["py.typed"]
"""


def _stage(root: Path, stage: Path, project: dict[str, object]) -> None:
    source = root / "src" / "sundial"
    target = stage / "src" / "sundial"
    ignore = shutil.ignore_patterns("__pycache__")
    for package in PACKAGES:
        shutil.copytree(source / package, target / package, ignore=ignore)
    for module in MODULES:
        (target / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / module, target / module)
    shutil.copy2(root / "LICENSE", stage / "LICENSE")
    (stage / "README.md").write_text(
        "# kubectl-sundial\n\nThe `kubectl sundial` plugin of Sundial, a Kubernetes-native job"
        " scheduler, without the server's dependencies: `pipx install kubectl-sundial`, then"
        " `kubectl sundial --help`. It reads your kubeconfig and nothing else.\n",
        encoding="utf-8",
    )
    (stage / "pyproject.toml").write_text(_pyproject(project), encoding="utf-8")


def build(out: Path, *, root: Path, semver: str) -> list[Path]:
    """The plugin's wheel into ``out`` and its krew archive and manifest into ``out/krew``;
    ``semver``: the version as SemVer, which krew wants (the chart's version)."""
    project = pyproject.project(root)
    stage = out / ".plugin-source"
    _stage(root, stage, project)
    try:
        subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(stage)],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as error:
        raise SystemExit(
            f"make dist: the plugin's wheel failed:\n{error.stderr.decode()}"
        ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    release = str(project["version"])
    [wheel] = out.glob(f"kubectl_sundial-{release}-*.whl")
    krew = out / "krew"
    krew.mkdir(exist_ok=True)
    archive = krew / f"{DISTRIBUTION}-{release}.tar.gz"
    launcher = _LAUNCHER.replace("WHEEL_NAME", wheel.name).replace("VERSION", release)
    _archive(archive, {
        "kubectl-sundial": (launcher.encode(), 0o755),
        wheel.name: (wheel.read_bytes(), 0o644),
        "LICENSE": ((root / "LICENSE").read_bytes(), 0o644),
    })  # fmt: skip
    source = str(dict(project.get("urls") or {})["Source"])
    manifest = krew / "sundial.yaml"
    manifest.write_text(krew_manifest(release, semver, source, archive), encoding="utf-8")
    return [wheel, archive, manifest]


def _archive(path: Path, members: dict[str, tuple[bytes, int]]) -> None:
    """A gzipped tar of ``members`` (name: (bytes, mode)), the same bytes for the same input."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, (data, mode) in sorted(members.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(gzip.compress(raw.getvalue(), mtime=0))


def krew_manifest(release: str, semver: str, source: str, archive: Path) -> str:
    """The krew plugin manifest for ``archive``, as the GitHub release of ``release`` (tag
    ``vRELEASE``) serves it; krew names versions in SemVer (``semver``)."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    url = f"{source}/releases/download/v{release}/{archive.name}"
    return f"""apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: sundial
spec:
  version: v{semver}
  homepage: {source}
  shortDescription: Run, wait for and read Sundial's scheduled jobs
  description: |
    kubectl sundial works with Sundial's ScheduledJobs and JobRuns: run one now and wait for
    it, follow its Pods' logs, list what ran and why runs wait, suspend, resume, cancel,
    replay, backfill, lint manifests before applying them, and read the run history a
    namespace's RBAC lets you read. It uses your kubeconfig and nothing else.
  caveats: |
    The plugin is Python: it needs python3 (3.11 or newer) on the PATH, or SUNDIAL_PYTHON
    naming one. Its first run installs its packages into ~/.cache/kubectl-sundial.
  platforms:
    - selector:
        matchExpressions:
          - key: os
            operator: In
            values: [linux, darwin]
      uri: {url}
      sha256: {digest}
      files:
        - from: "*"
          to: "."
      bin: kubectl-sundial
"""

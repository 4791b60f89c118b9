"""``requirements.lock`` is what the images install, byte for byte: every package pinned with
the hashes of its files, every dependency ``pyproject.toml`` names (and its build backend)
pinned at a version the project accepts, and both Dockerfiles installing from it in pip's
hash-checking mode, with the lock inside the build context and the image key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[3]
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def locked() -> dict[str, tuple[Version, list[str]]]:
    """Each pinned package of the lock: its version and the hashes given for it."""
    entries: dict[str, tuple[Version, list[str]]] = {}
    text = LOCK.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        pin = PIN.match(line)
        assert pin, f"requirements.lock: not a pinned requirement: {line!r}"
        name = canonicalize_name(pin["name"])
        entries[name] = (Version(pin["version"]), HASH.findall(line))
    return entries


def declared() -> list[Requirement]:
    """The run-time dependencies, the ``redis`` extra (the hot queue runs in the images) and the
    build backend ``pyproject.toml`` declares."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = pyproject["project"]
    names = (
        project["dependencies"]
        + project["optional-dependencies"]["redis"]
        + pyproject["build-system"]["requires"]
    )
    return [Requirement(name) for name in names]


def test_every_locked_package_is_pinned_with_the_hashes_of_its_files() -> None:
    entries = locked()
    assert len(entries) >= len(declared())
    unhashed = sorted(name for name, (_, hashes) in entries.items() if not hashes)
    assert unhashed == []


@pytest.mark.parametrize("requirement", declared(), ids=str)
def test_every_declared_dependency_is_locked_at_a_version_the_project_accepts(
    requirement: Requirement,
) -> None:
    entries = locked()
    name = canonicalize_name(requirement.name)
    assert name in entries, f"{requirement} is not in requirements.lock: run `make lock`"
    version, _ = entries[name]
    assert requirement.specifier.contains(version, prereleases=True), (
        f"requirements.lock pins {name}=={version}, outside {requirement}: run `make lock`"
    )


@pytest.mark.parametrize("dockerfile", ["runner/Dockerfile", "operator/Dockerfile"])
def test_the_images_install_only_what_the_lock_names(dockerfile: str) -> None:
    text = (ROOT / dockerfile).read_text(encoding="utf-8").replace("\\\n", " ")
    installs = [line for line in text.splitlines() if "pip install" in line]
    assert installs, f"{dockerfile} installs nothing"
    for line in installs:
        for command in line.split("&&"):
            if "pip install" not in command:
                continue
            assert "--no-deps" in command, f"{dockerfile}: {command.strip()!r} resolves on its own"
            assert "/src/requirements.lock" in command or "--no-build-isolation" in command, (
                f"{dockerfile}: {command.strip()!r} fetches a build backend the lock does not pin"
            )
    assert "--require-hashes" in text
    assert re.search(r"^COPY requirements\.lock ", text, re.MULTILINE)


def test_the_lock_is_in_the_build_context_and_the_image_key() -> None:
    ignore = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert "!requirements.lock" in ignore
    context = (ROOT / "hack/images/dockerfile.sh").read_text(encoding="utf-8")
    listed = re.search(r"ls-files -z -- (?P<files>[^|]+)\|", context)
    assert listed and "requirements.lock" in listed["files"].split()


#: The Python of the images (hack/images/recipes/python.sh: Debian bookworm's python3). The
#: lock is compiled on whatever Python runs `make lock`, which may be newer: a dependency a
#: package needs only below some version would then be left out of the images.
IMAGE_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.2", "extra": ""}


def test_every_dependency_of_a_locked_package_on_the_images_python_is_locked() -> None:
    """redis needs async-timeout below Python 3.11.3: compiled on 3.11.7, the lock left it out,
    and the images (3.11.2) could not import redis.asyncio: a runner given a Redis URL never
    started. Read from the installed packages' metadata, as pip would resolve them there."""
    from importlib import metadata

    entries = locked()
    missing = []
    for name in entries:
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # not installed here (a build backend's own): pip checked it when locking
        for text in requires:
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate(IMAGE_PYTHON):
                continue
            if canonicalize_name(requirement.name) not in entries:
                missing.append(f"{name} needs {requirement}")
    assert missing == [], "name these in pyproject.toml's redis extra and run `make lock`"

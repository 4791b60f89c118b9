"""``make dist``: what a release of Sundial publishes, built here into ``dist/``.

- the Python distribution, wheel and sdist (``python -m build``);
- the kubectl plugin alone: its wheel, ``kubectl-sundial``, and for krew an archive and the
  manifest naming it (``krew/``; ``sundial.localdev.plugin_dist``);
- the Helm chart, packaged with ``version`` and ``appVersion`` set to the project's version
  (``pyproject.toml`` is the one place the version is written) and, when the images are
  built, the operator image's digest in ``operator.image.digest``, so an installation of the
  packaged chart runs exactly the image released with it (the runner's digest is listed, not
  pinned: the chart's runner is usually an image of the user's, built FROM it);
- the operator and runner images as OCI archives (``hack/images/build``), each with the digest
  of its manifest (``images/digests.json``), which a registry keeps when they are pushed;
- an SBOM (CycloneDX 1.5 JSON) of the Python packages the product installs: the distribution
  and its run-time dependencies, as resolved in the environment that builds it;
- ``SHA256SUMS`` over all of it.

Nothing is pushed: publishing (the chart to an OCI registry, the images, the package) is a CI
workflow's job on a tag. ``--no-images`` skips the images (minutes on a cold cache).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from sundial.localdev import cluster, plugin_dist, pyproject

__all__ = ["build_all", "main", "package_chart", "pin_digest", "sbom", "version"]

ROOT = Path(__file__).resolve().parents[3]
IMAGES = ("operator", "runner")


def version(root: Path = ROOT) -> str:
    """The project's version, from ``pyproject.toml``."""
    return str(pyproject.project(root)["version"])


def build_all(out: Path, *, images: bool = True, root: Path = ROOT) -> list[Path]:
    """Build every artifact into ``out`` (emptied first); the files written."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    release = version(root)
    _python(root, out)
    plugin_dist.build(out, root=root, semver=_chart_version(release))
    digests = _images(root, out, release) if images else {}
    package_chart(out, release, digests.get("operator", ""), root=root)
    (out / "sbom.cdx.json").write_text(json.dumps(sbom(release), indent=2) + "\n")
    files = sorted(path for path in out.rglob("*") if path.is_file())
    sums = [f"{_sha256(path)}  {path.relative_to(out)}" for path in files]
    (out / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    return [*files, out / "SHA256SUMS"]


def _python(root: Path, out: Path) -> None:
    source = out / ".source"  # a copy: the build leaves build/ and *.egg-info behind
    shutil.copytree(
        root,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"
        ),
    )
    try:
        subprocess.run(
            [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except subprocess.CalledProcessError as error:
        raise SystemExit(f"make dist: python -m build failed:\n{error.stderr.decode()}") from None
    finally:
        shutil.rmtree(source, ignore_errors=True)


def package_chart(
    out: Path,
    release: str,
    operator_digest: str = "",
    *,
    root: Path = ROOT,
    helm: Path | None = None,
) -> Path:
    """The chart packaged into ``out`` as a release publishes it (its version and appVersion
    from ``release``, the operator pinned by ``operator_digest`` if given); returns the file."""
    # SUNDIAL_HELM: a helm binary of the machine's (a release workflow's), instead of the one
    # the local cluster builds from source
    helm = helm or Path(os.environ.get("SUNDIAL_HELM") or cluster.bin_dir() / "helm")
    if not helm.is_file():
        raise SystemExit(
            f"make dist: helm is not built yet ({helm}): run hack/cluster/build, "
            "or name a helm binary in SUNDIAL_HELM"
        )
    chart = out / ".chart" / "sundial"
    shutil.copytree(root / "charts" / "sundial", chart)
    if operator_digest:
        values = chart / "values.yaml"
        values.write_text(pin_digest(values.read_text(encoding="utf-8"), operator_digest))
    home = out / ".helm"
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }
    command = [str(helm), "package", str(chart), "--destination", str(out)]
    command += ["--version", _chart_version(release), "--app-version", release]
    try:
        subprocess.run(command, check=True, capture_output=True, env=environment, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(chart.parent, ignore_errors=True)
    return out / f"sundial-{_chart_version(release)}.tgz"


#: ``operator.image.digest`` in the text of values.yaml: the operator's first ``image:`` key,
#: after whatever keys and comments come before it in the operator's block.
_OPERATOR_DIGEST = re.compile(
    r'(?m)(^operator:\n(?:  .*\n|\n)*?  image:\n(?:    .*\n)*?    digest: )""$'
)


def pin_digest(values: str, digest: str) -> str:
    """The chart's ``values.yaml`` text with ``operator.image.digest`` set to ``digest``, its
    comments kept (a reader of the packaged chart reads them)."""
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise SystemExit(f"make dist: {digest!r} is not a sha256 manifest digest")
    pinned, count = _OPERATOR_DIGEST.subn(lambda found: f'{found[1]}"{digest}"', values)
    if count != 1:
        raise SystemExit('make dist: values.yaml has no operator.image.digest: "" to pin')
    return pinned


def _chart_version(release: str) -> str:
    """A chart version is SemVer: ``0.1.0.dev0`` (PEP 440) becomes ``0.1.0-dev0``."""
    found = re.fullmatch(r"([0-9]+\.[0-9]+\.[0-9]+)(?:\.?(dev|a|b|rc)\.?([0-9]+))?", release)
    if found is None:
        raise SystemExit(f"make dist: version {release!r} is not N.N.N[.devN|aN|bN|rcN]")
    base, tag, number = found.groups()
    return base if tag is None else f"{base}-{tag}{number}"


def _images(root: Path, out: Path, release: str) -> dict[str, str]:
    built = subprocess.run(
        [str(root / "hack" / "images" / "build"), *IMAGES],
        check=True,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    env_file = Path(built.stdout.strip().splitlines()[-1])
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line)
    folder = out / "images"
    folder.mkdir()
    digests = {}
    for name in IMAGES:
        archive = Path(values[f"SUNDIAL_IMAGE_{name.upper()}_ARCHIVE"])
        target = folder / f"{name}-{release}.oci.tar"
        shutil.copyfile(archive, target)
        digests[name] = manifest_digest(target)
    (folder / "digests.json").write_text(json.dumps(digests, indent=2) + "\n")
    return digests


def manifest_digest(archive: Path) -> str:
    """The digest of the image's manifest in an OCI archive (its ``index.json``'s first)."""
    with tarfile.open(archive) as tar:
        member = tar.extractfile("index.json")
        if member is None:
            raise SystemExit(f"make dist: {archive} has no index.json")
        index = json.load(member)
    return str(index["manifests"][0]["digest"])


def sbom(release: str, distribution: str = "sundial-scheduler") -> dict[str, object]:
    """A CycloneDX 1.5 document: ``distribution`` and the packages its run-time requirements
    (no extras) resolve to in this environment."""
    components = []
    for name in sorted(_runtime_closure(distribution) - {_key(distribution)}):
        dist = metadata.distribution(name)
        component: dict[str, object] = {
            "type": "library",
            "name": dist.metadata["Name"],
            "version": dist.version,
            "purl": f"pkg:pypi/{_key(dist.metadata['Name'])}@{dist.version}",
        }
        expression = dist.metadata["License-Expression"]
        named = _classifier_licence(dist)
        if expression:  # SPDX, as the package declares it
            component["licenses"] = [{"expression": expression}]
        elif named:  # a trove classifier's name, not an SPDX identifier
            component["licenses"] = [{"license": {"name": named}}]
        components.append(component)
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": f"urn:uuid:{uuid.uuid4()}",
        "version": 1,
        "metadata": {
            "timestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "component": {
                "type": "application",
                "name": distribution,
                "version": release,
                "purl": f"pkg:pypi/{distribution}@{release}",
                "licenses": [{"expression": "Apache-2.0"}],
            },
        },
        "components": components,
    }


def _runtime_closure(distribution: str) -> set[str]:
    seen: set[str] = set()
    todo = [distribution]
    while todo:
        name = _key(todo.pop())
        if name in seen:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional platform package not installed here
        seen.add(name)
        todo.extend(_required(dist.requires or ()))
    return seen


def _required(requirements: Sequence[str]) -> Iterator[str]:
    """The names of ``requirements`` that apply here without any extra."""
    from packaging.requirements import Requirement

    for text in requirements:
        requirement = Requirement(text)
        marker = requirement.marker
        if marker is None or marker.evaluate({"extra": ""}):
            yield requirement.name


def _classifier_licence(dist: metadata.Distribution) -> str | None:
    for classifier in dist.metadata.get_all("Classifier") or ():
        if classifier.startswith("License :: OSI Approved :: "):
            return str(classifier).rsplit(" :: ", 1)[1]
    return None


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make dist", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--no-images", action="store_true", help="skip the OCI archives")
    args = parser.parse_args(argv)
    files = build_all(args.out, images=not args.no_images)
    for path in files:
        print(path.relative_to(args.out))
    print(f"version {version()} in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    os.umask(0o022)
    sys.exit(main())

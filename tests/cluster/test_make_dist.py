"""``make dist`` (``sundial.localdev.dist``) builds what a release publishes from one version:
the wheel and sdist, the chart packaged with that version (SemVer) and appVersion, an SBOM of
the run-time packages, and SHA256SUMS that verify. The images are skipped here (the real-node
tier builds them); the digest they are published with is read from an OCI archive's index."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml

from sundial.localdev import dist


@pytest.mark.usefixtures("helm_binary")
def test_one_version_names_the_wheel_the_sdist_the_chart_and_the_sbom(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    files = dist.build_all(out, images=False)
    release = dist.version()
    names = sorted(path.name for path in files)
    chart_version = release.replace(".dev", "-dev")
    wheel = f"sundial_scheduler-{release}-py3-none-any.whl"
    assert names == sorted(
        [
            "SHA256SUMS",
            "sbom.cdx.json",
            f"sundial-{chart_version}.tgz",
            wheel,
            f"sundial_scheduler-{release}.tar.gz",
            f"kubectl_sundial-{release}-py3-none-any.whl",
            f"kubectl-sundial-{release}.tar.gz",
            "sundial.yaml",
        ]
    )
    krew = yaml.safe_load((out / "krew" / "sundial.yaml").read_text())
    assert krew["spec"]["version"] == f"v{chart_version}"
    with tarfile.open(out / f"sundial-{chart_version}.tgz") as chart:
        member = chart.extractfile("sundial/Chart.yaml")
        assert member is not None
        meta = yaml.safe_load(member)
    assert (meta["version"], meta["appVersion"]) == (chart_version, release)
    assert "sundial/localdev/dist.py" not in zipfile.ZipFile(out / wheel).namelist()

    bom = json.loads((out / "sbom.cdx.json").read_text())
    assert bom["metadata"]["component"]["version"] == release
    components = {c["name"].lower(): c for c in bom["components"]}
    assert components["psycopg"]["version"] == metadata.version("psycopg")
    assert components["psycopg"]["purl"] == f"pkg:pypi/psycopg@{metadata.version('psycopg')}"
    assert {"kopf", "kubernetes", "pydantic", "croniter"} <= set(components)
    assert "pytest" not in components and "ruff" not in components  # extras are not shipped

    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == digest, name


def test_an_images_digest_is_its_manifests(tmp_path: Path) -> None:
    archive = tmp_path / "image.oci.tar"
    index = {"schemaVersion": 2, "manifests": [{"digest": "sha256:" + "ab" * 32, "size": 1}]}
    body = json.dumps(index).encode()
    with tarfile.open(archive, "w") as tar:
        entry = tarfile.TarInfo("index.json")
        entry.size = len(body)
        tar.addfile(entry, io.BytesIO(body))
    assert dist.manifest_digest(archive) == "sha256:" + "ab" * 32


def test_the_packaged_chart_pins_the_operator_image_it_was_released_with() -> None:
    values = (dist.ROOT / "charts" / "sundial" / "values.yaml").read_text()
    digest = "sha256:" + "cd" * 32
    pinned = dist.pin_digest(values, digest)
    loaded = yaml.safe_load(pinned)
    assert loaded["operator"]["image"]["digest"] == digest
    # only that value moved: the runner (the user's image) and every comment stay as they were
    original = yaml.safe_load(values)
    original["operator"]["image"]["digest"] = digest
    assert loaded == original
    assert len(pinned.splitlines()) == len(values.splitlines())
    with pytest.raises(SystemExit, match="not a sha256 manifest digest"):
        dist.pin_digest(values, "sha256:abc")
    with pytest.raises(SystemExit, match=r"no operator\.image\.digest"):
        dist.pin_digest(pinned, digest)

"""crds/ is exactly what the generator emits, and `sundial crds` emits it."""

from __future__ import annotations

import pathlib

import pytest
import yaml
from click.testing import CliRunner

from sundial import cli
from sundial.api import crd

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
CRDS_DIRECTORY = REPOSITORY / "crds"


@pytest.mark.parametrize("resource", crd.RESOURCES, ids=lambda resource: resource.kind)
def test_committed_crd_equals_generator_output(resource: crd.Resource) -> None:
    committed = (CRDS_DIRECTORY / crd.file_name(resource)).read_text(encoding="utf-8")
    assert committed == crd.render(resource), (
        f"crds/{crd.file_name(resource)} is stale: run `sundial crds --output crds` and commit it"
    )


def test_crds_directory_holds_only_generated_files() -> None:
    expected = {crd.file_name(resource) for resource in crd.RESOURCES}
    assert {path.name for path in CRDS_DIRECTORY.iterdir()} == expected


def test_crds_command_writes_one_file_per_kind(tmp_path: pathlib.Path) -> None:
    result = CliRunner().invoke(cli.main, ["crds", "--output", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    for resource in crd.RESOURCES:
        written = (tmp_path / "out" / crd.file_name(resource)).read_text(encoding="utf-8")
        assert written == crd.render(resource)


def test_crds_command_prints_every_crd_as_yaml_documents() -> None:
    result = CliRunner().invoke(cli.main, ["crds"])
    assert result.exit_code == 0, result.output
    documents = list(yaml.safe_load_all(result.output))
    assert [d["metadata"]["name"] for d in documents] == [r.crd_name for r in crd.RESOURCES]

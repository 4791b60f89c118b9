"""docs/reference.md is exactly what the generator emits, and names every field of both kinds."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from sundial.api import crd, reference

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
REFERENCE = REPOSITORY / "docs" / "reference.md"


def test_committed_reference_equals_generator_output() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == reference.render(), (
        "docs/reference.md is stale: run "
        "`.venv/bin/python -m sundial.api.reference > docs/reference.md` and commit it"
    )


def test_module_prints_the_reference() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "sundial.api.reference"], capture_output=True, text=True, check=True
    ).stdout
    assert printed == reference.render()


def _leaf_paths(node: dict[str, Any], path: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(object path, field name, field schema) for every declared field, as an oracle."""
    found = []
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        return _leaf_paths(node["items"], f"{path}[]")
    for name, child in node.get("properties", {}).items():
        found.append((path, name, child))
        found.extend(_leaf_paths(child, f"{path}.{name}"))
    return found


@pytest.mark.parametrize("resource", crd.RESOURCES, ids=lambda resource: resource.kind)
def test_every_field_has_a_row_with_its_default_and_bounds(resource: crd.Resource) -> None:
    text = reference.render()
    schema = crd.crd(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    fields = _leaf_paths(schema["properties"]["spec"], ".spec")
    fields += _leaf_paths(schema["properties"]["status"], ".status")
    assert len(fields) > 20
    for path, name, child in fields:
        heading = f"### `{resource.kind}{path}`"
        assert heading in text, f"no table for {resource.kind}{path}"
        section = text.split(heading, 1)[1].split("\n### ", 1)[0]
        [row] = [line for line in section.splitlines() if line.startswith(f"| `{name}`")]
        if "default" in child:
            assert f"`{json.dumps(child['default'], sort_keys=True)}`" in row, row
        for bound in ("maximum", "maxLength", "maxItems"):
            if bound in child and "enum" not in child:
                assert str(child[bound]) in row, f"{path}.{name} lost its {bound}: {row}"
        for rule in child.get("x-kubernetes-validations", []):
            assert rule["message"].split()[0] in text

"""The chart's CRD templates render files/crds/, which must be crds/ byte for byte."""

from __future__ import annotations

import pathlib

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
CHART_CRDS = REPOSITORY / "charts" / "sundial" / "files" / "crds"


def test_the_charts_crds_are_the_generated_crds() -> None:
    generated = {p.name: p.read_bytes() for p in (REPOSITORY / "crds").glob("*.yaml")}
    charted = {p.name: p.read_bytes() for p in CHART_CRDS.glob("*.yaml")}
    assert sorted(charted) == sorted(generated), "charts/sundial/files/crds/ lists other files"
    for name, content in generated.items():
        assert charted[name] == content, (
            f"charts/sundial/files/crds/{name} is stale: cp crds/*.yaml charts/sundial/files/crds/"
        )

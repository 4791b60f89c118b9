"""``sundial.localdev.crds.established``: a CRD the apiserver has not written a status for yet
is "not yet", not an error (``kubectl wait`` once failed on it with ``.status.conditions accessor
error``)."""

from __future__ import annotations

from typing import Any

import pytest

from sundial.localdev import crds


def crd(status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "jobruns.sundial.dev"}, "status": status}


@pytest.mark.parametrize(
    "status",
    [
        None,
        {},
        {"conditions": None},
        {"conditions": []},
        {"conditions": [{"type": "NamesAccepted", "status": "True"}]},
        {"conditions": [{"type": "Established", "status": "False"}]},
    ],
)
def test_a_crd_without_established_true_is_not_established_yet(status: Any) -> None:
    assert not crds.established(crd(status))
    assert not crds.established({"metadata": {"name": "jobruns.sundial.dev"}})


def test_established_true_is_established() -> None:
    conditions = [
        {"type": "NamesAccepted", "status": "True"},
        {"type": "Established", "status": "True"},
    ]
    assert crds.established(crd({"conditions": conditions}))

"""The chart README's table of every value is written from values.yaml and kept current."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sundial.localdev import chart_readme

CHART = Path(__file__).resolve().parents[3] / "charts" / "sundial"

SAMPLE = textwrap.dedent(
    """\
    # A file comment, not a key's.

    # -- Namespaces watched | all when empty.
    watchNamespaces: []
    # -- Shared by every Pod;
    # a second line continues it.
    securityContext:
      runAsUser: 65532
      capabilities: {drop: [ALL]}
    store:
      # -- Parted from its key by a blank line: documents nothing.

      port: 5432
      # -- A bundled database.
      bundled:
        # -- Turn it on.
        enabled: false
        image: postgres
    """
)


def test_each_documented_key_is_one_row_and_the_rest_are_walked_into() -> None:
    rows = chart_readme.table(SAMPLE).splitlines()
    assert rows[:2] == ["| Key | Default | What |", "|---|---|---|"]
    assert rows[2:] == [
        "| `watchNamespaces` | `[]` | Namespaces watched \\| all when empty. |",
        '| `securityContext` | `{"runAsUser": 65532, "capabilities": {"drop": ["ALL"]}}` |'
        " Shared by every Pod; a second line continues it. |",
        "| `store.port` | `5432` |  |",
        "| `store.bundled` | (below) | A bundled database. |",
        "| `store.bundled.enabled` | `false` | Turn it on. |",
        '| `store.bundled.image` | `"postgres"` |  |',
    ]


def test_the_readme_lacking_its_markers_is_refused_saying_which() -> None:
    with pytest.raises(ValueError, match="lacks the markers"):
        chart_readme.rewritten("# A README\n", SAMPLE)


def test_the_charts_readme_has_every_value_of_values_yaml() -> None:
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    fresh = chart_readme.rewritten(readme, (CHART / "values.yaml").read_text(encoding="utf-8"))
    assert fresh == readme, (
        "charts/sundial/README.md's table of values is stale: run `make chart-readme`"
    )

"""Where the chart is, for the chart's tests (imported by name, like operator_testing)."""

from __future__ import annotations

import pathlib

REPOSITORY = pathlib.Path(__file__).resolve().parents[3]
CHART = REPOSITORY / "charts" / "sundial"

"""Pod-mode tests: the real control plane (tests/cluster/conftest.py) plus a real PostgreSQL
database per test, cloned from the migrated template of tests/integration/conftest.py, whose
fixtures are re-exported here rather than copied."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_INTEGRATION = Path(__file__).parents[2] / "integration" / "conftest.py"
_spec = importlib.util.spec_from_file_location("sundial_integration_fixtures", _INTEGRATION)
assert _spec is not None and _spec.loader is not None
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)

migrated_template = _fixtures.migrated_template
store_dsn = _fixtures.store_dsn
pool = _fixtures.pool

"""The root of the test tree: loads the shared fixture modules of ``tests/support`` for every
tier, and has pytest rewrite the asserts of every ``support`` module (a failed helper assert
shows its values, as one in a test does)."""

import pytest

pytest.register_assert_rewrite("support")

pytest_plugins = ["support.databases", "support.operator_fixtures"]

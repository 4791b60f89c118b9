from __future__ import annotations

import pathlib

import pytest

import handlers.sample_jobs  # noqa: F401  (registers the sample handlers)

TESTS_DIR = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def child_env() -> dict[str, str]:
    """Environment that lets a `python -m sundial exec` child import `handlers.sample_jobs`."""
    return {"PYTHONPATH": str(TESTS_DIR)}

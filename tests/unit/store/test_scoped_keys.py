"""Idempotency keys under a scope (a namespace, a run-now request) always fit the store."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sundial.store import runs

NAMESPACE = "n" * 63  # the longest namespace
KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-:/=+._", min_size=1, max_size=255)


def test_a_key_that_fits_is_kept_as_it_is() -> None:
    assert runs.scoped_key("team-a", "nightly-2026-12-03") == "team-a/nightly-2026-12-03"
    assert runs.scoped_key("run-now:abc", "1", separator=":") == "run-now:abc:1"


@given(KEYS)
def test_every_scoped_key_fits_the_store(key: str) -> None:
    assert len(runs.scoped_key(NAMESPACE, key)) <= runs.MAX_IDEMPOTENCY_KEY_LENGTH


@given(KEYS, KEYS)
def test_two_keys_never_share_a_scoped_key(first: str, second: str) -> None:
    if first != second:
        assert runs.scoped_key(NAMESPACE, first) != runs.scoped_key(NAMESPACE, second)


def test_long_keys_that_share_a_prefix_stay_apart() -> None:
    """Cutting at the store's bound made these two one run."""
    first, second = "x" * 250 + "-one", "x" * 250 + "-two"
    assert runs.scoped_key(NAMESPACE, first) != runs.scoped_key(NAMESPACE, second)
    assert runs.scoped_key(NAMESPACE, first) == runs.scoped_key(NAMESPACE, first)

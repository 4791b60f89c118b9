"""The digest statement is composed from the two queries whose rows it digests."""

from __future__ import annotations

import pytest

from sundial.store import history, queries


def test_the_digest_statement_holds_both_queries_it_digests_and_no_marker():
    history._digest_query.cache_clear()
    statement = history._digest_query()

    assert queries.get("history_schedules").strip() in statement
    assert queries.get("history_window").strip() in statement
    assert "(:schedules)" not in statement
    assert "(:window)" not in statement


def test_a_marker_written_twice_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch):
    real_get = queries.get

    def digests_with_a_marker_in_a_comment(name: str) -> str:
        text = real_get(name)
        if name == "history_digests":
            return "-- reads (:window) below\n" + text
        return text

    monkeypatch.setattr(queries, "get", digests_with_a_marker_in_a_comment)
    history._digest_query.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"\(:window\) exactly once, found 2"):
            history._digest_query()
    finally:
        history._digest_query.cache_clear()

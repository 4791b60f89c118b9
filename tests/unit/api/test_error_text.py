"""One error-text limit: every cut text fits both bounds and keeps its start and its end."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sundial.api import error_text, job_run


@given(st.text(max_size=3 * error_text.MAX_ERROR_CHARS))
def test_a_cut_text_fits_the_character_and_byte_bounds(text: str) -> None:
    cut = error_text.truncate(text)
    assert len(cut) <= error_text.MAX_ERROR_CHARS
    assert len(cut.encode()) <= error_text.MAX_ERROR_BYTES
    if len(text) <= error_text.MAX_ERROR_CHARS and len(text.encode()) <= error_text.MAX_ERROR_BYTES:
        assert cut == text


@given(st.text(min_size=1, max_size=50), st.text(min_size=1, max_size=50), st.sampled_from("x€𝄞"))
def test_a_cut_text_keeps_its_start_and_end(start: str, end: str, filler: str) -> None:
    text = start + filler * (3 * error_text.MAX_ERROR_CHARS) + end
    cut = error_text.truncate(text)
    assert cut.startswith(start) and cut.endswith(end)
    assert " … " in cut


def test_the_job_run_status_holds_exactly_the_limit() -> None:
    field = job_run.JobRunStatus.model_fields["last_error"]
    assert any(getattr(m, "max_length", None) == error_text.MAX_ERROR_CHARS for m in field.metadata)

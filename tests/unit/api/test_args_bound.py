"""Arguments are size-bounded where the schema can't see: the serialized JSON size."""

from __future__ import annotations

import pytest

from sundial.api import validate


def test_args_at_the_limit_are_accepted() -> None:
    overhead = validate.args_size({"k": ""})
    args = {"k": "x" * (validate.MAX_ARGS_BYTES - overhead)}
    assert validate.args_size(args) == validate.MAX_ARGS_BYTES
    assert validate.validate_args_size(args) is args


def test_one_byte_over_the_limit_is_rejected_with_size_and_advice() -> None:
    overhead = validate.args_size({"k": ""})
    args = {"k": "x" * (validate.MAX_ARGS_BYTES - overhead + 1)}
    with pytest.raises(validate.ArgsTooLargeError) as caught:
        validate.validate_args_size(args)
    message = str(caught.value)
    assert f"{validate.MAX_ARGS_BYTES + 1} bytes" in message
    assert "pass a reference" in message


def test_size_counts_utf8_bytes_not_characters() -> None:
    assert validate.args_size({"k": "é"}) == validate.args_size({"k": "e"}) + 1


def test_size_does_not_depend_on_key_order() -> None:
    assert validate.args_size({"a": 1, "b": [1, 2]}) == validate.args_size({"b": [1, 2], "a": 1})


def test_the_stores_refusal_is_the_apis_error_too() -> None:
    """One concept, one ``except``: a submission the store refuses for its args' size is a
    refused submission and the API's ``ArgsTooLargeError`` alike, with the same message."""
    from sundial.store import errors

    refused = errors.ArgsTooLargeError(validate.MAX_ARGS_BYTES + 1)
    assert isinstance(refused, validate.ArgsTooLargeError)
    assert isinstance(refused, errors.InvalidSubmissionError)
    assert str(refused) == validate.too_large(validate.MAX_ARGS_BYTES + 1)

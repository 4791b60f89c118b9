"""The one JSON log setup every daemon uses: stable keys, extras as given, kopf's object."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from sundial.observability import logging as json_logging


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """``configure`` replaces the root logger's handlers: put everything back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    quiet = {
        name: logging.getLogger(name).level for name in ("kopf.objects", "kubernetes", "urllib3")
    }
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in quiet.items():
        logging.getLogger(name).setLevel(was)


def _line(stream: io.StringIO) -> dict[str, object]:
    [line] = stream.getvalue().splitlines()
    return json.loads(line)  # type: ignore[no-any-return]


def test_every_line_has_the_stable_keys_and_the_extras_as_given() -> None:
    stream = io.StringIO()
    json_logging.configure("INFO", stream=stream)
    logging.getLogger("sundial.scheduler").info(
        "leading", extra={"holder": "h-1", "epoch": 3, "when": object}
    )
    entry = _line(stream)
    assert {k: entry[k] for k in ("level", "logger", "message", "holder", "epoch")} == {
        "level": "info",
        "logger": "sundial.scheduler",
        "message": "leading",
        "holder": "h-1",
        "epoch": 3,
    }
    assert str(entry["time"]).endswith("+00:00") and entry["when"] == str(object)


def test_kopf_object_loggers_contribute_the_object_and_nothing_private() -> None:
    stream = io.StringIO()
    json_logging.configure(stream=stream)
    logging.getLogger("kopf.activities").warning(
        "handler failed",
        extra={
            "k8s_ref": {"namespace": "ns", "name": "job", "uid": "u"},
            "k8s_skip": True,
            "_private": 1,
            "settings": object(),
        },
    )
    entry = _line(stream)
    assert entry["object"] == "ns/job"
    assert not {"k8s_ref", "k8s_skip", "_private", "settings"} & set(entry)


def test_library_chatter_stays_at_warning() -> None:
    json_logging.configure(stream=io.StringIO())
    for name in ("kopf.objects", "kubernetes", "urllib3"):
        assert logging.getLogger(name).getEffectiveLevel() == logging.WARNING

"""``kubectl sundial`` output: kubectl's ages, the CRDs' printer columns, ``-o`` formats."""

from __future__ import annotations

import datetime
import json
import re

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sundial.api import crd
from sundial.kubectl_plugin import client, output

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("seconds", "printed"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (330, "5m30s"),
        (599, "9m59s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (7 * 3600 + 59 * 60, "7h59m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 3599, "47h"),
        (2 * 86400 + 3 * 3600, "2d3h"),
        (7 * 86400, "7d"),
        (8 * 86400, "8d"),
        (729 * 86400, "729d"),
        (730 * 86400 + 86400, "2y1d"),
        (8 * 365 * 86400, "8y"),
    ],
)
def test_ages_read_as_kubectl_prints_them(seconds: int, printed: str) -> None:
    assert output.age(seconds) == printed


_UNITS = {"y": 365 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}


@given(st.integers(min_value=0, max_value=20 * 365 * 86400))
def test_an_age_never_overstates_and_drops_at_most_its_last_unit(seconds: int) -> None:
    printed = output.age(seconds)
    parts = re.findall(r"(\d+)([ydhms])", printed)
    assert "".join(f"{n}{u}" for n, u in parts) == printed and len(parts) <= 2
    shown = sum(int(n) * _UNITS[u] for n, u in parts)
    assert shown <= seconds
    # What is cut is less than one of the smallest unit shown (or the next one down).
    smallest = _UNITS[parts[-1][1]]
    assert seconds - shown < max(smallest, 1) * (24 if parts[-1][1] == "d" else 60)


def test_columns_are_the_crds_printer_columns() -> None:
    for resource in crd.RESOURCES:
        ours = client.RESOURCES[resource.kind].printer_columns
        assert ours == resource.printer_columns
    body = {
        "metadata": {"name": "nightly", "creationTimestamp": "2026-12-01T11:55:00Z"},
        "spec": {"schedule": "0 2 * * *", "suspend": False, "queue": "etl"},
        "status": {
            "conditions": [
                {"type": "Stalled", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "activeCount": 0,
            "lastScheduleTime": "2026-11-29T12:00:00Z",
        },
    }
    table = output.object_table(client.SCHEDULED_JOB, [body], now=NOW)
    header, row = table.splitlines()
    assert re.split(r"\s{2,}", header) == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "READY",
        "ACTIVE",
        "LAST SCHEDULE",
        "NEXT SCHEDULE",
        "AGE",
    ]
    cells = re.split(r"\s{2,}", row)
    assert cells == ["nightly", "0 2 * * *", "<none>", "false", "True", "0", "2d", "<none>", "5m"]
    wide = output.object_table(client.SCHEDULED_JOB, [body], now=NOW, wide=True)
    assert wide.splitlines()[0].endswith("QUEUE   HANDLER")
    assert re.split(r"\s{2,}", wide.splitlines()[1])[-2:] == ["etl", "<none>"]


def test_column_values_follow_the_jsonpath_filters() -> None:
    body = {"status": {"conditions": [{"type": "A", "status": "x"}, {"type": "B", "status": "y"}]}}
    assert output.column_value(body, '.status.conditions[?(@.type=="B")].status') == "y"
    assert output.column_value(body, '.status.conditions[?(@.type=="C")].status') is None
    assert output.column_value(body, ".spec.missing") is None


def test_output_formats() -> None:
    items = [
        {"metadata": {"name": "a", "namespace": "n1"}},
        {"metadata": {"name": "b", "namespace": "n2"}},
    ]
    assert output.render(client.JOB_RUN, items, "name", now=NOW) == (
        "jobrun.sundial.dev/a\njobrun.sundial.dev/b"
    )
    listed = json.loads(output.render(client.JOB_RUN, items, "json", now=NOW))
    assert listed["kind"] == "List" and listed["items"] == items
    single = yaml.safe_load(output.render(client.JOB_RUN, items[:1], "yaml", now=NOW, single=True))
    assert single == items[0]
    table = output.render(client.JOB_RUN, items, None, now=NOW, with_namespace=True)
    assert table.splitlines()[0].startswith("NAMESPACE   NAME   JOB")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("5m", 300), ("1h30m", 5400), ("2d", 172800)]
)
def test_durations(text: str, seconds: int) -> None:
    assert output.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m5", "1.5h", "-3s"])
def test_bad_durations_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ValueError, match=r"write e\.g\. 90s"):
        output.parse_duration(text)


@pytest.mark.parametrize(
    "word", ["sj", "scheduledjobs", "ScheduledJob", "scheduledjob.sundial.dev"]
)
def test_resource_names_kubectl_accepts(word: str) -> None:
    assert client.resource_named(word) is client.SCHEDULED_JOB


def test_an_unknown_resource_names_the_known_ones() -> None:
    with pytest.raises(client.outcome.PluginError, match=r"sj \(scheduledjobs\), jr \(jobruns\)"):
        client.resource_named("pods")

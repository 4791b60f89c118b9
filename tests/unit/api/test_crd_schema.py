"""The generated CRDs are structural, bounded and carry what kubectl users expect."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from sundial.api import crd

CRDS = {resource.kind: crd.crd(resource) for resource in crd.RESOURCES}


def schema_of(kind: str) -> dict[str, Any]:
    schema: dict[str, Any] = CRDS[kind]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def nodes(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path or "<root>", node
    for name, child in node.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    if "items" in node:
        yield from nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from nodes(node["additionalProperties"], f"{path}{{}}")


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_every_node_is_typed_and_bounded(kind: str) -> None:
    for path, node in nodes(schema_of(kind)):
        assert not {"$ref", "$defs", "anyOf", "oneOf", "allOf", "title"} & node.keys(), path
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), path
        if node.get("type") == "string":
            assert isinstance(node.get("maxLength"), int), f"{path}: string without maxLength"
        if node.get("type") == "array":
            assert isinstance(node.get("maxItems"), int), f"{path}: array without maxItems"
            assert not node.get("uniqueItems"), path
        if node.get("type") == "object" and "additionalProperties" in node:
            assert isinstance(node["additionalProperties"], dict), path
            assert "maxProperties" in node, path
        assert node.get("default", "unset") is not None, f"{path}: default null"


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_generator_self_check_finds_nothing(kind: str) -> None:
    assert crd.structural_problems(schema_of(kind)) == []


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "string"}}},
            ".a: string without maxLength",
        ),
        ({"type": "array", "items": {"type": "integer"}}, "<root>: array without maxItems"),
        ({"type": "object", "properties": {"a": {"maxLength": 3}}}, ".a: has no type"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, ".a: has $ref"),
        (
            {
                "type": "object",
                "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
            },
            ".a: has anyOf",
        ),
        ({"type": "object", "title": "A"}, "<root>: has title"),
        ({"type": "object", "additionalProperties": True}, "additionalProperties must be a schema"),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "map without maxProperties",
        ),
        ({"type": "object", "required": ["a"]}, "requires undeclared a"),
    ],
)
def test_self_check_rejects_what_the_apiserver_would(schema: dict[str, Any], problem: str) -> None:
    assert any(problem in found for found in crd.structural_problems(schema))


def test_optional_fields_are_plain_types_left_out_of_required() -> None:
    spec = schema_of("ScheduledJob")["properties"]["spec"]
    assert spec["required"] == ["schedule"]
    assert spec["properties"]["timeZone"]["type"] == "string"
    assert spec["properties"]["handler"]["type"] == "object"
    assert "default" not in spec["properties"]["timeZone"]


def test_defaults_are_those_kubernetes_users_expect() -> None:
    spec = schema_of("ScheduledJob")["properties"]["spec"]["properties"]
    assert spec["concurrencyPolicy"]["default"] == "Forbid"
    assert spec["missedFirePolicy"]["default"] == "Coalesce"
    assert spec["suspend"]["default"] is False
    assert spec["successfulRunsHistoryLimit"]["default"] == 3
    assert spec["failedRunsHistoryLimit"]["default"] == 1
    # No default on purpose: absent, the handler's registration decides (api.execution_model).
    assert "default" not in spec["handler"]["properties"]["executionModel"]


def test_free_form_fields_preserve_unknown_fields() -> None:
    spec = schema_of("ScheduledJob")["properties"]["spec"]["properties"]
    template = spec["template"]
    assert template["type"] == "object"
    assert template["x-kubernetes-preserve-unknown-fields"] is True
    assert template["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    args = spec["handler"]["properties"]["args"]
    assert args == {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "maxProperties": 64,
        "description": args["description"],
    }


def test_enum_strings_are_bounded_by_their_longest_value() -> None:
    spec = schema_of("ScheduledJob")["properties"]["spec"]["properties"]
    assert spec["missedFirePolicy"]["enum"] == ["Coalesce", "Backfill", "Skip"]
    assert spec["missedFirePolicy"]["maxLength"] == len("Coalesce")


def test_time_zone_pattern_accepts_iana_names_only() -> None:
    pattern = re.compile(
        schema_of("ScheduledJob")["properties"]["spec"]["properties"]["timeZone"]["pattern"]
    )
    for name in ("UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5"):
        assert pattern.match(name), name
    for name in ("", "Europe/", "/Paris", "Europe Paris", "../etc/passwd"):
        assert not pattern.match(name), name


def test_conditions_are_a_map_keyed_by_type() -> None:
    conditions = schema_of("JobRun")["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "type" in conditions["items"]["required"]


@pytest.mark.parametrize(
    ("kind", "plural", "short_name"),
    [("ScheduledJob", "scheduledjobs", "sj"), ("JobRun", "jobruns", "jr")],
)
def test_names_scope_version_and_status_subresource(
    kind: str, plural: str, short_name: str
) -> None:
    spec = CRDS[kind]["spec"]
    assert CRDS[kind]["metadata"]["name"] == f"{plural}.sundial.dev"
    assert spec["group"] == "sundial.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"]["shortNames"] == [short_name]
    assert spec["names"]["categories"] == ["sundial"]
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns_match_the_design() -> None:
    def columns(kind: str) -> list[str]:
        version = CRDS[kind]["spec"]["versions"][0]
        return [
            c["name"].upper() for c in version["additionalPrinterColumns"] if "priority" not in c
        ]

    scheduled_job_columns = ["SCHEDULE", "TIMEZONE", "SUSPEND", "READY", "ACTIVE"]
    scheduled_job_columns += ["LAST SCHEDULE", "NEXT SCHEDULE", "AGE"]
    assert columns("ScheduledJob") == scheduled_job_columns
    assert columns("JobRun") == ["JOB", "PHASE", "ATTEMPT", "REASON", "STARTED", "DURATION", "AGE"]


def test_future_times_are_string_columns_since_kubectl_shows_future_dates_as_invalid() -> None:
    [column] = [
        c
        for c in CRDS["ScheduledJob"]["spec"]["versions"][0]["additionalPrinterColumns"]
        if c["jsonPath"] == ".status.nextScheduleTime"
    ]
    assert column["type"] == "string"


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_printer_columns_point_at_declared_fields(kind: str) -> None:
    schema = schema_of(kind)
    for column in CRDS[kind]["spec"]["versions"][0]["additionalPrinterColumns"]:
        path = column["jsonPath"]
        if path.startswith(".metadata."):
            continue
        node = schema
        for part in re.sub(r"\[\?\(.*\)\]", "", path).strip(".").split("."):
            node = node["properties"][part]
            node = node.get("items", node)
        assert node["type"] == column["type"] or (
            column["type"] == "date" and node.get("format") == "date-time"
        ), path

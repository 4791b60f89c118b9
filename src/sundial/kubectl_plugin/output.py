"""What the plugin prints: kubectl's tables, relative ages and ``-o`` formats.

Tables take their columns from the CRDs' printer columns (``sundial.api.crd``, the source the
CRD YAML is generated from), so ``kubectl sundial get`` and ``kubectl get`` show the same
columns; ``-o wide`` adds the priority-1 ones. Ages are printed exactly as kubectl's
``duration.HumanDuration`` prints them (``45s``, ``5m30s``, ``2d3h``, ``3y``).
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import yaml

from sundial.kubectl_plugin import client

__all__ = ["FORMATS", "age", "column_value", "render", "table"]

FORMATS: Final = ("wide", "json", "yaml", "name")
NONE: Final = "<none>"


def age(seconds: float) -> str:
    """A duration as kubectl prints an age (``duration.HumanDuration``)."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d{rest}h" if rest else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        return f"{hours // 24 // 365}y{rest}d" if rest else f"{hours // 24 // 365}y"
    return f"{hours // 24 // 365}y"


def age_since(timestamp: str | None, now: datetime.datetime) -> str:
    """The age of an RFC 3339 timestamp at ``now``; ``<unknown>`` for a bad one."""
    if not timestamp:
        return NONE
    try:
        then = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.UTC)
    return age((now - then).total_seconds())


_SEGMENT: Final = re.compile(r"([^.\[]+)(?:\[\?\(@\.([A-Za-z0-9_]+)==\"([^\"]*)\"\)\])?")


def column_value(body: Mapping[str, Any], json_path: str) -> Any:
    """The value at a printer column's JSONPath: dotted fields, optionally filtered lists
    (``.status.conditions[?(@.type=="Ready")].status``); None when absent."""
    values: list[Any] = [body]
    for match in _SEGMENT.finditer(json_path):
        field, filter_key, filter_value = match.groups()
        found: list[Any] = []
        for value in values:
            if isinstance(value, Mapping) and field in value:
                found.append(value[field])
        if filter_key is not None:
            found = [
                item
                for items in found
                if isinstance(items, list)
                for item in items
                if isinstance(item, Mapping) and str(item.get(filter_key)) == filter_value
            ]
        values = found
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def _cell(value: Any, column_type: str, now: datetime.datetime) -> str:
    if value is None or value == []:
        return NONE
    if column_type == "date":
        return age_since(str(value), now)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)


def table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    """Columns padded as kubectl pads them (three spaces between columns)."""
    widths = [len(name) for name in header]
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = []
    for row in (header, *rows):
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
        lines.append("   ".join(cells).rstrip())
    return "\n".join(lines)


def object_table(
    resource: client.Resource,
    objects: Iterable[Mapping[str, Any]],
    *,
    now: datetime.datetime,
    wide: bool = False,
    with_namespace: bool = False,
) -> str:
    """``kubectl get`` of Sundial objects, with the CRD's printer columns."""
    columns = [c for c in resource.printer_columns if wide or not c.get("priority")]
    header = [
        *(["NAMESPACE"] if with_namespace else []),
        "NAME",
        *(str(c["name"]).upper() for c in columns),
    ]
    rows = []
    for body in objects:
        metadata = body.get("metadata") or {}
        rows.append(
            [
                *([str(metadata.get("namespace", ""))] if with_namespace else []),
                str(metadata.get("name", "")),
                *(_cell(column_value(body, c["jsonPath"]), c["type"], now) for c in columns),
            ]
        )
    return table(rows, header)


def render(
    resource: client.Resource,
    objects: Sequence[Mapping[str, Any]],
    output: str | None,
    *,
    now: datetime.datetime,
    single: bool = False,
    with_namespace: bool = False,
) -> str:
    """``objects`` in the ``-o`` format (None: the table); ``single``: one object was asked
    for by name, so json and yaml print it rather than a List."""
    if output == "name":
        return "\n".join(f"{resource.type_name}/{o['metadata']['name']}" for o in objects)
    if output in ("json", "yaml"):
        document: Any = (
            objects[0]
            if single and objects
            else {"apiVersion": "v1", "kind": "List", "items": list(objects), "metadata": {}}
        )
        if output == "json":
            return json.dumps(document, indent=4, sort_keys=False)
        return yaml.safe_dump(document, sort_keys=False, default_flow_style=False).rstrip("\n")
    if not objects:
        return ""
    return object_table(
        resource, objects, now=now, wide=output == "wide", with_namespace=with_namespace
    )


def parse_duration(text: str) -> int:
    """``90s``, ``5m``, ``1h30m``, ``2d`` or plain seconds, in whole seconds; ValueError else."""
    stripped = text.strip()
    if stripped.isdigit():
        return int(stripped)
    match = re.fullmatch(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", stripped)
    if not stripped or match is None:
        raise ValueError(f"{text!r} is not a duration; write e.g. 90s, 5m, 1h30m or 2d")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return days * 86400 + hours * 3600 + minutes * 60 + seconds

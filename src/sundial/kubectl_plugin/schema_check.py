"""The CRD's OpenAPI schema and CEL rules, applied offline the way the API server applies them.

``schema_problems`` walks an object against the structural schema that ``sundial.api.crd``
generates (the same one ``crds/*.yaml`` holds) and words each problem as the API server and
``kubectl apply`` (strict field validation) do: ``spec.schedule: Required value``,
``spec.x: Unsupported value: …``, ``unknown field "spec.foo"``. Only the keywords Sundial's
schemas use are implemented; a test walks both schemas to keep it that way.

``cel_problems`` evaluates the ``x-kubernetes-validations`` rules with cel-python after filling
in the schema's defaults, as the API server does before it validates. Transition rules (those
naming ``oldSelf``) only apply to updates and are skipped. cel-python is optional: without it
the CEL rules are reported as not checked.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
from collections.abc import Iterator
from typing import Any, Final

__all__ = ["KEYWORDS", "cel_available", "cel_problems", "schema_problems", "with_defaults"]

#: The schema keywords this module understands; anything else in a schema is a bug here.
KEYWORDS: Final = frozenset(
    {
        "type", "properties", "required", "items", "enum", "pattern", "format", "default",
        "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "maxProperties",
        "description", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys", "x-kubernetes-validations",
    }
)  # fmt: skip

_TYPES: Final[dict[str, type | tuple[type, ...]]] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
}


def _shown(value: Any) -> str:
    if isinstance(value, dict | list):
        return f'"{"object" if isinstance(value, dict) else "array"}"'
    return json.dumps(value)


def _type_name(value: Any) -> str:
    """The OpenAPI type of a JSON value, as the API server names it in a type error."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def _type_ok(value: Any, wanted: str) -> bool:
    if wanted in ("integer", "number") and isinstance(value, bool):
        return False
    if wanted == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[wanted])


def schema_problems(schema: dict[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """Every way ``value`` breaks ``schema``, as the API server words it."""
    where = path or "<root>"
    wanted = schema.get("type")
    if value is None:
        return  # a null is dropped by the API server for non-nullable fields
    if wanted and not _type_ok(value, wanted):
        given = _type_name(value)
        yield (
            f'{where}: Invalid value: "{given}": {where} in body must be of type {wanted}: '
            f'"{given}"'
        )
        return
    if "enum" in schema and value not in schema["enum"]:
        supported = ", ".join(json.dumps(item) for item in schema["enum"])
        yield f"{where}: Unsupported value: {_shown(value)}: supported values: {supported}"
    if isinstance(value, str):
        yield from _string_problems(schema, value, where)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield (
                f"{where}: Invalid value: {value}: {where} in body should be greater than or "
                f"equal to {schema['minimum']}"
            )
        if "maximum" in schema and value > schema["maximum"]:
            yield (
                f"{where}: Invalid value: {value}: {where} in body should be less than or "
                f"equal to {schema['maximum']}"
            )
    if isinstance(value, list):
        yield from _list_problems(schema, value, path, where)
    if isinstance(value, dict):
        yield from _object_problems(schema, value, path, where)


def _string_problems(schema: dict[str, Any], value: str, where: str) -> Iterator[str]:
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        yield f"{where}: Too long: may not be more than {schema['maxLength']} bytes"
    if "minLength" in schema and len(value) < schema["minLength"]:
        yield (
            f"{where}: Invalid value: {_shown(value)}: {where} in body should be at least "
            f"{schema['minLength']} chars long"
        )
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        yield (
            f"{where}: Invalid value: {_shown(value)}: {where} in body should match "
            f"'{schema['pattern']}'"
        )
    if schema.get("format") == "date-time":
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is None or "T" not in value.upper() or parsed.tzinfo is None:
            yield (
                f"{where}: Invalid value: {_shown(value)}: {where} in body must be of type "
                'date-time: "' + value + '"'
            )


def _list_problems(
    schema: dict[str, Any], value: list[Any], path: str, where: str
) -> Iterator[str]:
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        yield f"{where}: Too many: {len(value)}: must have at most {schema['maxItems']} items"
    if "minItems" in schema and len(value) < schema["minItems"]:
        yield (
            f"{where}: Invalid value: {len(value)}: {where} in body should have at least "
            f"{schema['minItems']} items"
        )
    if schema.get("x-kubernetes-list-type") == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                yield f"{path}[{index}]: Duplicate value: {_shown(item)}"
            seen.append(item)
    if schema.get("x-kubernetes-list-type") == "map":
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen_keys: list[Any] = []
        for index, item in enumerate(value):
            key = [item.get(k) for k in keys] if isinstance(item, dict) else None
            if key is not None and key in seen_keys:
                shown = json.dumps(dict(zip(keys, key, strict=True)))
                yield f"{path}[{index}]: Duplicate value: {shown}"
            seen_keys.append(key)
    if "items" in schema:
        for index, item in enumerate(value):
            yield from schema_problems(schema["items"], item, f"{path}[{index}]")


def _object_problems(
    schema: dict[str, Any], value: dict[str, Any], path: str, where: str
) -> Iterator[str]:
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        yield f"{where}: Too many: {len(value)}: must have at most {schema['maxProperties']} items"
    for name in schema.get("required") or ():
        if value.get(name) is None:
            yield f"{_join(path, name)}: Required value"
    properties = schema.get("properties")
    if properties is None:
        return
    for name, item in value.items():
        child = properties.get(name)
        if child is None:
            if not schema.get("x-kubernetes-preserve-unknown-fields"):
                yield f'unknown field "{_join(path, name)}"'
            continue
        yield from schema_problems(child, item, _join(path, name))


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def with_defaults(schema: dict[str, Any], data: Any) -> Any:
    """``data`` with the schema's defaults filled in, as the API server does first."""
    data = copy.deepcopy(data)
    if isinstance(data, dict):
        for name, child in (schema.get("properties") or {}).items():
            if name not in data and "default" in child:
                data[name] = copy.deepcopy(child["default"])
            if name in data:
                data[name] = with_defaults(child, data[name])
    elif isinstance(data, list) and "items" in schema:
        data = [with_defaults(schema["items"], item) for item in data]
    return data


def cel_available() -> bool:
    try:
        import celpy  # noqa: F401  (an optional extra: sundial-scheduler[cel])
    except ImportError:
        return False
    return True


def _first_huge_integer(data: Any, where: str) -> tuple[str, int] | None:
    """The path and value of the first integer in ``data`` that 64 bits cannot hold."""
    if isinstance(data, int) and not isinstance(data, bool):
        return (where, data) if not -(2**63) <= data < 2**64 else None
    if isinstance(data, dict):
        children = [(_join(where, str(key)), child) for key, child in data.items()]
    elif isinstance(data, list):
        children = [(f"{where}[{index}]", child) for index, child in enumerate(data)]
    else:
        return None
    for inner, child in children:
        if (found := _first_huge_integer(child, inner)) is not None:
            return found
    return None


def cel_problems(schema: dict[str, Any], value: Any, path: str = "") -> Iterator[str]:
    """The message of every CEL rule ``value`` breaks, with the API server's field path."""
    import celpy  # an optional extra: callers check cel_available() first

    to_cel: Any = celpy.json_to_cel  # type: ignore[attr-defined]
    eval_error: Any = celpy.CELEvalError  # type: ignore[attr-defined]
    environment = celpy.Environment()

    def walk(node: dict[str, Any], data: Any, where: str) -> Iterator[str]:
        if data is None:
            return
        for rule in node.get("x-kubernetes-validations") or ():
            if "oldSelf" in rule["rule"]:
                continue  # a transition rule: only an update has an old object
            program = environment.program(environment.compile(rule["rule"]))
            try:
                converted = to_cel(data)
            except (ValueError, OverflowError):
                # celpy refuses an integer past 64 bits, as the API server's CEL does.
                field, number = _first_huge_integer(data, where) or (where, 0)
                digits = str(number)
                shown = f"{digits[:12]}... ({len(digits)} digits)" if len(digits) > 24 else digits
                yield f"{field or '<root>'}: Invalid value: {shown}: past CEL's 64-bit integers"
                return
            try:
                result = program.evaluate({"self": converted})
            except eval_error as error:
                yield f"{where or '<root>'}: the rule {rule['rule']!r} could not run: {error}"
                continue
            if not bool(result):
                field = _join(where, rule["fieldPath"].strip(".")) if "fieldPath" in rule else where
                yield f"{field or '<root>'}: Invalid value: {rule['message']}"
        if isinstance(data, dict):
            for name, child in (node.get("properties") or {}).items():
                if name in data:
                    yield from walk(child, data[name], _join(where, name))
        elif isinstance(data, list) and "items" in node:
            for index, item in enumerate(data):
                yield from walk(node["items"], item, f"{where}[{index}]")

    yield from walk(schema, with_defaults(schema, value), path)

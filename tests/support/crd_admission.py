"""What the apiserver admits, computed from the CRD itself, and manifests generated from it.

``admission_errors`` is an independent reading of the generated CRD (``sundial.api.crd``),
not of the models: it does what kube-apiserver does to a custom resource on create - prune
explicit nulls and unknown fields, apply defaults, check the structural schema (types,
bounds, patterns with Go's RE2 meaning of ``$``, formats, list types), then the CEL rules
(with cel-python) - and returns every refusal with its path. ``sundial_only_errors`` adds the
checks the models make on purpose beyond the CRD (docs/adr/0015): the free-form JSON rules of
``sundial.api.json_values``, the byte bound on ``args`` and ``oom.maxMemory`` being a positive
quantity a bigint holds.

``manifests(kind)`` generates objects from the CRD's OpenAPI schema, each node valid most of
the time and otherwise mutated: wrong JSON types, numbers past their bounds and past int64,
strings one character too long, NUL and other control characters, odd Unicode (zero-width,
bidi controls, line separators, astral planes), lists past maxItems and with duplicates, and
free-form JSON nested hundreds of levels deep. Property tests feed them to the models, the
reconcile entry points and the apiserver.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import functools
import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import celpy
from hypothesis import strategies as st

from sundial.api import crd, json_values, validate

SCHEMAS: dict[str, dict[str, Any]] = {
    resource.kind: crd.crd(resource)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for resource in crd.RESOURCES
}
ENVIRONMENT = celpy.Environment()
RFC3339 = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})\Z"
)
ODD_TEXT = [
    "\x00",
    "\x01",
    "\x1b",
    "\x7f",
    "\n",
    "\t",
    "\u200b",
    "\u202e",
    "\u2028",
    "\ufeff",
    "\ufffd",
    "e\u0301",
    "\U0001f600",
    "\u0663",
    "\u00a0",
]
Error = tuple[str, str]


# --- the apiserver's side -------------------------------------------------------------------


def _go_pattern(pattern: str) -> re.Pattern[str]:
    """A CRD pattern as RE2 reads it: ``$`` is the end of the text, not before a last newline."""
    return re.compile(re.sub(r"\$$", r"\\Z", pattern))


def prune(schema: dict[str, Any], data: Any) -> Any:
    """``data`` after the apiserver's pruning: explicit nulls of declared (non-nullable)
    fields and fields the schema does not declare are dropped, except under
    ``x-kubernetes-preserve-unknown-fields``."""
    if isinstance(data, dict) and schema.get("type") == "object":
        properties = schema.get("properties", {})
        keep = schema.get("x-kubernetes-preserve-unknown-fields", False)
        result = {}
        for key, value in data.items():
            if key in properties:
                if value is None:
                    continue
                result[key] = prune(properties[key], value)
            elif keep:
                result[key] = value
        return result
    if isinstance(data, list) and "items" in schema:
        return [prune(schema["items"], item) for item in data]
    return data


def _pruned(schema: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The object pruned; ``metadata`` is the apiserver's own (ObjectMeta), never pruned."""
    pruned: dict[str, Any] = prune(schema, manifest)
    if "metadata" in manifest:
        pruned["metadata"] = manifest["metadata"]
    return pruned


def with_defaults(schema: dict[str, Any], data: Any) -> Any:
    data = copy.deepcopy(data) if isinstance(data, dict | list) else data
    if isinstance(data, dict):
        for name, child in schema.get("properties", {}).items():
            if name not in data and "default" in child:
                data[name] = copy.deepcopy(child["default"])
            if name in data:
                data[name] = with_defaults(child, data[name])
    elif isinstance(data, list) and "items" in schema:
        data = [with_defaults(schema["items"], item) for item in data]
    return data


def _type_ok(kind: str | None, value: Any) -> bool:
    if kind is None:
        return True
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    raise AssertionError(f"unknown schema type {kind}")


def schema_errors(schema: dict[str, Any], value: Any, path: str) -> list[Error]:
    """The structural schema's refusals of ``value`` (already pruned and defaulted)."""
    if not _type_ok(schema.get("type"), value):
        return [(path, f"must be of type {schema['type']}")]
    found: list[Error] = []
    if "enum" in schema and value not in schema["enum"]:
        found.append((path, "Unsupported value"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            found.append((path, f"should be greater than or equal to {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            found.append((path, f"should be less than or equal to {schema['maximum']}"))
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            found.append((path, "Too long"))
        if "minLength" in schema and len(value) < schema["minLength"]:
            found.append((path, "should be at least"))
        if "pattern" in schema and not _go_pattern(schema["pattern"]).search(value):
            found.append((path, "should match"))
        if schema.get("format") == "date-time" and not RFC3339.match(value):
            found.append((path, "must be a date-time"))
    if isinstance(value, list):
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            found.append((path, "Too many"))
        if "minItems" in schema and len(value) < schema["minItems"]:
            found.append((path, "should have at least"))
        kind = schema.get("x-kubernetes-list-type")
        if kind == "set" and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            found.append((path, "Duplicate value"))
        if kind == "map":
            keys = [
                tuple(v.get(k) for k in schema["x-kubernetes-list-map-keys"])
                for v in value
                if isinstance(v, dict)
            ]
            if len(set(keys)) != len(keys):
                found.append((path, "Duplicate value"))
        for index, item in enumerate(value):
            found += schema_errors(schema.get("items", {}), item, f"{path}[{index}]")
    if isinstance(value, dict):
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            found.append((path, "Too many"))
        for name in schema.get("required", []):
            if name not in value:
                found.append((f"{path}.{name}".lstrip("."), "Required value"))
        for name, child in schema.get("properties", {}).items():
            if name in value:
                found += schema_errors(child, value[name], f"{path}.{name}".lstrip("."))
    return found


@functools.cache
def _program(rule: str) -> Any:
    """A rule compiled once: the CRD has a few dozen, evaluated for each of thousands of
    manifests."""
    return ENVIRONMENT.program(ENVIRONMENT.compile(rule))


def _evaluate(rule: str, self: Any) -> Any:
    return _program(rule).evaluate({"self": celpy.json_to_cel(self)})


def cel_errors(schema: dict[str, Any], data: Any, path: str) -> list[Error]:
    """The CEL rules' refusals (create: transition rules, which need oldSelf, do not run). A
    rule that cannot evaluate on ill-typed data is skipped, as it could not have run."""
    found: list[Error] = []
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"]:
            continue
        try:
            admitted = _evaluate(rule["rule"], data)
        except Exception:  # a cel-python evaluation error on a value of the wrong type
            continue
        if not admitted:
            found.append((path, rule["message"]))
    if isinstance(data, dict):
        for name, child in schema.get("properties", {}).items():
            if name in data:
                found += cel_errors(child, data[name], f"{path}.{name}".lstrip("."))
    elif isinstance(data, list) and "items" in schema:
        for index, item in enumerate(data):
            found += cel_errors(schema["items"], item, f"{path}[{index}]")
    return found


@contextlib.contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for this oracle's recursive helpers (and cel-python's) on deeply nested JSON, which
    the apiserver decodes up to 10,000 levels."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, 20_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def admission_errors(manifest: dict[str, Any], *, every_rule: bool = False) -> list[Error]:
    """Every refusal of ``manifest`` by the CRD, as (path, message); empty: it is admitted.

    Like the apiserver, the CEL rules do not run when the schema found a value of the wrong
    type (a "blocking" error); ``every_rule`` runs them anyway, to list every field a
    complete validation could blame."""
    with deep_recursion():
        schema = SCHEMAS[manifest["kind"]]
        admitted = with_defaults(schema, _pruned(schema, manifest))
        found = schema_errors(schema, admitted, "")
        if every_rule or not any("must be of type" in message for _, message in found):
            found += cel_errors(schema, admitted, "")
        return found


# --- what the models check on purpose beyond the CRD (docs/adr/0015) -----------------------


def _free_form(schema: dict[str, Any], data: Any, path: str) -> list[tuple[str, Any]]:
    """Every free-form subtree: preserve-unknown-fields objects without declared properties,
    and the undeclared fields of those that declare some."""
    found: list[tuple[str, Any]] = []
    if isinstance(data, dict) and schema.get("x-kubernetes-preserve-unknown-fields"):
        properties = schema.get("properties")
        if not properties:
            return [(path, data)]
        extras = {key: value for key, value in data.items() if key not in properties}
        if extras:
            found.append((path, extras))
    if isinstance(data, dict):
        for name, child in schema.get("properties", {}).items():
            if name in data:
                found += _free_form(child, data[name], f"{path}.{name}".lstrip("."))
    elif isinstance(data, list) and "items" in schema:
        for index, item in enumerate(data):
            found += _free_form(schema["items"], item, f"{path}[{index}]")
    return found


def sundial_only_errors(manifest: dict[str, Any]) -> list[Error]:
    """The refusals the models add to an otherwise admitted ``manifest``, by design."""
    schema = SCHEMAS[manifest["kind"]]
    admitted = _pruned(schema, manifest)
    found: list[Error] = []
    for path, value in _free_form(schema, admitted, ""):
        problem = json_values.problem(value)
        if problem is not None:
            found.append((path, problem))
        elif path.endswith("args") and validate.args_size(value) > validate.MAX_ARGS_BYTES:
            found.append((path, "more than the limit"))
    found += [
        (path, "not a positive memory quantity up to 8Ei")
        for path, quantity in _memory_quantities(admitted.get("spec"), "spec")
        if not 0 < (validate.memory_bytes(quantity) or 0) <= validate.MAX_MEMORY_BYTES
    ]
    return found


def _memory_quantities(spec: Any, path: str) -> list[tuple[str, str]]:
    """``oom.maxMemory`` of a spec and of a JobRun's inline job, where they are strings."""
    found: list[tuple[str, str]] = []
    if not isinstance(spec, dict):
        return found
    oom = spec.get("oom")
    if isinstance(oom, dict) and isinstance(oom.get("maxMemory"), str):
        found.append((f"{path}.oom.maxMemory", oom["maxMemory"]))
    found += _memory_quantities(spec.get("job"), f"{path}.job")
    return found


# --- manifests generated from the schema ---------------------------------------------------

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.integers(-(2**20), 2**20).map(lambda n: n + 0.5),
    st.text(max_size=12),
    st.sampled_from(ODD_TEXT),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=8) | st.sampled_from(ODD_TEXT), children, max_size=3)
    ),
    max_leaves=12,
)


def _deep(depth: int, leaf: Any) -> Any:
    value = leaf
    for index in range(depth):
        value = {"k": value} if index % 2 else [value]
    return value


def _hostile_free_form() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            lambda depth, leaf: {"deep": _deep(depth, leaf)},
            st.integers(json_values.MAX_DEPTH - 2, 1_500),
            JSON_SCALARS,
        ),
        st.builds(lambda text: {"k": text}, st.sampled_from(ODD_TEXT)),
        st.builds(lambda text: {text: 1}, st.sampled_from(ODD_TEXT)),
        st.just({"big": "x" * (validate.MAX_ARGS_BYTES + 1)}),
        st.builds(lambda n: {f"k{i}": i for i in range(n)}, st.integers(60, 70)),
    )


def _odd_string(base: str) -> st.SearchStrategy[str]:
    return st.builds(
        lambda odd, where: base[:where] + odd + base[where:],
        st.sampled_from(ODD_TEXT),
        st.integers(0, len(base)),
    )


def _valid(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        if schema.get("x-kubernetes-preserve-unknown-fields") and not properties:
            return st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=4)
        required = {name: node(properties[name]) for name in schema.get("required", [])}
        optional = {name: node(child) for name, child in properties.items() if name not in required}
        fixed = st.fixed_dictionaries(required, optional=optional)
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            extras = st.dictionaries(
                st.text(max_size=8).filter(lambda k: k not in properties), JSON_VALUES, max_size=2
            )
            return st.builds(lambda a, b: {**b, **a}, fixed, extras)
        return fixed
    if kind == "array":
        items = node(schema["items"])
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=3)
    if kind == "string":
        if "enum" in schema:
            return st.sampled_from(schema["enum"])
        if schema.get("format") == "date-time":
            return st.datetimes(
                min_value=datetime.datetime(2000, 1, 1), max_value=datetime.datetime(2100, 1, 1)
            ).map(lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
        if "pattern" in schema:
            return st.from_regex(_go_pattern(schema["pattern"]), fullmatch=True).filter(
                lambda text: len(text) <= schema.get("maxLength", 10**6)
            )
        return st.text(min_size=schema.get("minLength", 0), max_size=20)
    if kind == "integer":
        return st.integers(schema.get("minimum", -(2**31)), schema.get("maximum", 2**31))
    if kind == "boolean":
        return st.booleans()
    return JSON_VALUES


def _hostile(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    wrong_types = st.sampled_from(["5", "true", 5, 0, True, False, 1.5, [], {}, [1], {"a": 1}])
    options = [wrong_types.filter(lambda value: not _type_ok(kind, value))]
    if kind == "integer":
        edges = [2**63, -(2**63) - 1, 2**70]
        if "minimum" in schema:
            edges.append(schema["minimum"] - 1)
        if "maximum" in schema:
            edges.append(schema["maximum"] + 1)
        options.append(st.sampled_from(edges))
    if kind == "string" and "enum" not in schema:
        options.append(_valid(schema).flatmap(_odd_string))
        if "maxLength" in schema:
            options.append(st.just("a" * (schema["maxLength"] + 1)))
        options.append(st.just(""))
    if kind == "array":
        # One item too many, of a valid (small) item: a hostile item here could be an
        # over-long list itself, and nesting those grows as maxItems to the power of the depth
        # (a run was OOM-killed at 23 GB serialising one).
        options.append(
            _valid(schema["items"]).map(lambda item: [item] * (schema.get("maxItems", 3) + 1))
        )
        options.append(node(schema["items"]).map(lambda item: [item, item]))
    if kind == "object" and schema.get("x-kubernetes-preserve-unknown-fields"):
        options.append(
            st.builds(lambda valid, bad: {**valid, **bad}, _valid(schema), _hostile_free_form())
        )
    return st.one_of(options)


def node(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value for ``schema``: valid most of the time, hostile once in ``HOSTILE_ONE_IN``.

    Both strategies are built once per schema (a CRD's schema lives as long as the session):
    built again for each draw, building and validating them took most of a test's time."""
    built = _NODES.get(id(schema))
    if built is None or built[0] is not schema:
        valid, hostile = _valid(schema), _hostile(schema)
        # Hypothesis favours the ends of an integer range; a residue in the middle of a wide
        # one is drawn about as often as its share.
        strategy = st.integers(0, 100_000).flatmap(
            lambda n: hostile if n % HOSTILE_ONE_IN == 7 else valid
        )
        built = _NODES[id(schema)] = (schema, strategy)
    return built[1]


_NODES: dict[int, tuple[dict[str, Any], st.SearchStrategy[Any]]] = {}


HOSTILE_ONE_IN = 12


def _job_shape(job: Any, use_template: bool) -> Any:
    """``job`` with exactly one of handler or template, and Pod-only fields only on Pod jobs."""
    if not isinstance(job, dict):
        return job
    job = dict(job)
    if "handler" not in job and "template" not in job:
        job["handler"] = {"name": "examples.hello"}
    if use_template and "template" in job:
        job.pop("handler", None)
    elif "handler" in job:
        job.pop("template", None)
        handler = job["handler"]
        if isinstance(handler, dict) and handler.get("executionModel") != "pod":
            for field in ("startTimeoutSeconds", "oom", "podDeletionPolicy"):
                job.pop(field, None)
    return job


SCHEDULES = ["*/5 * * * *", "@hourly", "0 9 * * 1-5", "@every 90s", "30 2 1 * *"]
ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


def _shaped(kind: str, spec: Any, use_template: bool, use_ref: bool, pick: int) -> Any:
    """Most manifests follow the cross-field rules and name things that exist (a real cron
    expression and zone, the ScheduledJob ``hello``), so that the rest of them gets exercised;
    ``pick`` chooses among those."""
    if not isinstance(spec, dict):
        return spec
    if kind == "ScheduledJob":
        spec = _job_shape(spec, use_template)
        if spec.get("missedFirePolicy") != "Backfill":
            spec.pop("maxBackfill", None)
        if isinstance(spec.get("schedule"), str):
            spec["schedule"] = SCHEDULES[pick % len(SCHEDULES)]
        if isinstance(spec.get("timeZone"), str):
            spec["timeZone"] = ZONES[pick % len(ZONES)]
        return spec
    spec = dict(spec)
    if isinstance(spec.get("dependsOn"), list) and pick % 3:
        spec.pop("dependsOn")  # an upstream that does not exist waits, by design
    if use_ref or "job" not in spec:
        spec.pop("job", None)
        if not isinstance(spec.get("jobRef"), dict) or isinstance(spec["jobRef"].get("name"), str):
            spec["jobRef"] = {"name": "hello"}
    else:
        spec.pop("jobRef", None)
        spec["job"] = _job_shape(spec["job"], use_template)
    if "runAt" in spec:
        spec.pop("delaySeconds", None)
    return spec


def manifests(kind: str, name: str = "hostile") -> st.SearchStrategy[dict[str, Any]]:
    """Whole objects of ``kind`` (``spec`` generated from the CRD; no ``status``)."""
    spec = SCHEMAS[kind]["properties"]["spec"]
    return st.builds(
        lambda body, shaped, use_template, use_ref, pick: {
            "apiVersion": "sundial.dev/v1alpha1",
            "kind": kind,
            "metadata": {"name": name},
            "spec": _shaped(kind, body, use_template, use_ref, pick) if shaped else body,
        },
        _valid(spec),
        st.integers(0, 100_000).map(lambda n: n % 10 != 7),
        st.booleans(),
        st.booleans(),
        st.integers(0, 1000),
    )

"""Typed filter values: the JSON schema offered to the query model, and its answer
turned into the retrieval filter DSL.

Per declared field (REFERENCE.md, "Generate search"):

- string: a value, or a list (any of) -> ``{"f": v}`` / ``{"f": {"$in": [...]}}``
- int / float: a value, a list, or a range ``{"gte", "lte"}`` ->
  ``{"f": v}`` / ``{"f": {"$in": [...]}}`` / ``{"f": {"$gte": a, "$lte": b}}``
- list: values that must all be present -> ``{"f": {"$contains": [...]}}``

No free-form objects: every property is typed and nothing else is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domains.models import Domain, FilterField

_JSON_TYPES = {"int": "integer", "float": "number"}


@dataclass(frozen=True)
class FieldSpec:
    name: str
    value_type: str
    description: str = ""


def declared_fields(domains: Sequence[Domain]) -> dict[str, FieldSpec]:
    """The filter fields the routed domains declare (first declaration of a name wins).

    Reads ``domain.filter_fields.all()`` (prefetch it).
    """
    fields: dict[str, FieldSpec] = {}
    for domain in domains:
        for field in domain.filter_fields.all():
            fields.setdefault(field.name, FieldSpec(field.name, field.value_type, field.description))
    return fields


def field_schema(spec: FieldSpec) -> dict:
    """The JSON schema of one field's value (see the module docstring)."""
    if spec.value_type == FilterField.ValueType.LIST:
        schema: dict = {"type": "array", "items": {"type": "string"}}
    elif spec.value_type in _JSON_TYPES:
        scalar = {"type": _JSON_TYPES[spec.value_type]}
        schema = {
            "anyOf": [
                scalar,
                {"type": "array", "items": scalar},
                {
                    "type": "object",
                    "properties": {"gte": scalar, "lte": scalar},
                    "additionalProperties": False,
                },
            ]
        }
    else:
        schema = {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    if spec.description:
        schema["description"] = spec.description
    return schema


def query_schema(fields: dict[str, FieldSpec], max_queries: int) -> dict:
    """The schema of the query-generation answer: ``{"queries": [...], "filters": {...}}``
    (``filters`` only when some field is declared)."""
    properties: dict = {
        "queries": {"type": "array", "items": {"type": "string"}, "maxItems": max_queries},
    }
    required = ["queries"]
    if fields:
        properties["filters"] = {
            "type": "object",
            "properties": {name: field_schema(spec) for name, spec in fields.items()},
            "additionalProperties": False,
        }
        required.append("filters")
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _scalar(value, value_type: str):
    """``value`` as the field's type, or None when it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if value_type == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        return None
    if value_type == "float":
        if isinstance(value, (int, float)):
            return float(value)
        try:
            return float(value) if isinstance(value, str) else None
        except ValueError:
            return None
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    return text or None


def _clause(value, spec: FieldSpec):
    kind = spec.value_type
    if kind == FilterField.ValueType.LIST:
        items = value if isinstance(value, list) else [value]
        values = [v for v in (_scalar(i, "string") for i in items) if v is not None]
        return {"$contains": list(dict.fromkeys(values))} if values else None
    if isinstance(value, dict):
        if kind not in _JSON_TYPES:
            return None
        bounds = {f"${key}": _scalar(value.get(key), kind) for key in ("gte", "lte")}
        bounds = {k: v for k, v in bounds.items() if v is not None}
        if "$gte" in bounds and "$lte" in bounds and bounds["$gte"] > bounds["$lte"]:
            return None
        return bounds or None
    if isinstance(value, list):
        values = list(dict.fromkeys(v for v in (_scalar(i, kind) for i in value) if v is not None))
        if not values:
            return None
        return values[0] if len(values) == 1 else {"$in": values}
    return _scalar(value, kind)


def to_filter_dsl(values: dict | None, fields: dict[str, FieldSpec]) -> dict:
    """The model's ``filters`` object -> filter DSL; undeclared fields and values of the
    wrong type are dropped, empty values mean "no constraint"."""
    dsl: dict = {}
    for name, value in (values or {}).items():
        spec = fields.get(name)
        if spec is None:
            continue
        clause = _clause(value, spec)
        if clause is not None:
            dsl[name] = clause
    return dsl


def merge_filters(generated: dict, chosen: dict | None) -> dict:
    """Generated filters with the user's own on top (the user's clause wins per key)."""
    merged = dict(generated)
    merged.update(chosen or {})
    return merged

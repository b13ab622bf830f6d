"""Typed filter values: the JSON schema offered to the query model, and its answer
turned into the retrieval filter DSL (docs/retrieval.md, "Filters").

Fields and value types are the domains app's (:class:`domains.retrieval.filters.FieldSpec`,
:func:`domains.retrieval.filters.typed_value`); here a value of the wrong type is
dropped instead of raising, since it comes from a model. Per declared field:

- string: a value, or a list (any of) -> ``{"f": v}`` / ``{"f": {"$in": [...]}}``
- int / float: a value, a list, or a range ``{"gte", "lte"}`` ->
  ``{"f": v}`` / ``{"f": {"$in": [...]}}`` / ``{"f": {"$gte": a, "$lte": b}}``
- list: values that must all be present -> ``{"f": {"$contains": [...]}}``

No free-form objects: every property is typed and nothing else is accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from domains.models import Domain, FilterField
from domains.retrieval.filters import FieldSpec, field_specs, typed_value

_JSON_TYPES = {"int": "integer", "float": "number"}


def declared_fields(domains: Sequence[Domain]) -> dict[str, FieldSpec]:
    """The filter fields the routed domains declare (first declaration of a name wins).

    Reads ``domain.filter_fields.all()`` (prefetch it).
    """
    fields: dict[str, FieldSpec] = {}
    for domain in domains:
        for name, spec in field_specs(domain).items():
            fields.setdefault(name, spec)
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


def _scalar(value, spec: FieldSpec):
    """``value`` as the field's type (strings stripped), or None when it is not one."""
    try:
        typed = typed_value(spec, value)
    except ValueError:
        return None
    return (typed.strip() or None) if isinstance(typed, str) else typed


def _clause(value, spec: FieldSpec):
    kind = spec.value_type
    if kind == FilterField.ValueType.LIST:
        items = value if isinstance(value, list) else [value]
        item = replace(spec, value_type=FilterField.ValueType.STRING)
        values = [v for v in (_scalar(i, item) for i in items) if v is not None]
        return {"$contains": list(dict.fromkeys(values))} if values else None
    if isinstance(value, dict):
        if kind not in _JSON_TYPES:
            return None
        bounds = {f"${key}": _scalar(value.get(key), spec) for key in ("gte", "lte")}
        bounds = {k: v for k, v in bounds.items() if v is not None}
        if "$gte" in bounds and "$lte" in bounds and bounds["$gte"] > bounds["$lte"]:
            return None
        return bounds or None
    if isinstance(value, list):
        values = list(dict.fromkeys(v for v in (_scalar(i, spec) for i in value) if v is not None))
        if not values:
            return None
        return values[0] if len(values) == 1 else {"$in": values}
    return _scalar(value, spec)


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

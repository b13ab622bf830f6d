"""Metadata filter DSL -> SQL over the chunk alias ``c``, applied before ranking.

The DSL (docs/retrieval.md, "Filters"; the query model's typed values become it as in
docs/pipeline.md, "Filters")::

    {"year": {"$gte": 2020, "$lte": 2025},          # int/float: value, $in, ranges
     "journal": "Nature",                             # string: equality
     "doi": {"$in": ["10.1/a", "10.1/b"]},            # any of (a plain list means the same)
     "keywords": {"$contains": ["HH", "GABA"]},       # list: all values present
     "authors": "Sinha",                              # person name: any word of a name
     "$and": [{"year": {"$gte": 2000}}, {"year": {"$in": [2001, 2021]}}]}  # all hold

Only the fields a domain declares (FilterField) are used for that domain; any other
field is dropped there and logged. A chunk that lacks a field never matches a clause
on it. Values are typed by the field: ``int`` accepts integers (or their decimal
strings), ``float`` finite numbers, ``string`` strings (numbers are compared as their
text), ``list`` strings. A malformed value raises ``ValueError`` naming the field, as do
strings with a NUL character or a lone surrogate, ``$and`` nested over 8 levels and
``$in`` / ``$contains`` lists of more than MAX_FILTER_VALUES (100) values.

``year`` (int) is read from the indexed ``chunk.year`` column; other fields from
``chunk.metadata`` via SQL/JSON paths (lax mode: a list value matches when one of its
elements does). Person-name fields test membership of the lower-cased value in
``metadata["_<field>_variants"]`` (domains.person_names), so "Sinha" and "sinha" both
match "Ankur Sinha".
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from domains.person_names import variants_key
from domains.text import refused

logger = logging.getLogger("klea.retrieval")

RANGE_OPS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
OPERATORS = {"$eq", "$in", "$contains", *RANGE_OPS}
YEAR_COLUMN = "year"
# "$and" nests this deep at most (a deeper filter raises ValueError).
MAX_AND_DEPTH = 8
# Values one "$in" / "$contains" (or plain list) takes at most: each becomes a SQL/JSON
# path test evaluated per chunk, so the list bounds the work of one clause.
MAX_FILTER_VALUES = 100


# An integer value given as text: an optional sign, then ASCII digits ("+5", "-12").
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class FieldSpec:
    """What a domain declares about a filter field (a FilterField row, or a test's):
    the one description of a field for retrieval and for the query generator's schema."""

    name: str
    value_type: str  # string | int | float | list
    description: str = ""
    person_name: bool = False


@dataclass
class CompiledFilter:
    """``sql``: a boolean SQL expression over alias ``c`` ("TRUE" when empty);
    ``params``: its named parameters; ``dropped``: undeclared fields that were ignored."""

    sql: str = "TRUE"
    params: dict = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return self.sql == "TRUE"


def field_specs(domain) -> dict[str, FieldSpec]:
    """The declared filter fields of a Domain, by name."""
    return {
        f.name: FieldSpec(f.name, f.value_type, description=f.description, person_name=f.person_name)
        for f in domain.filter_fields.all()
    }


class _Compiler:
    def __init__(self, specs: Mapping[str, FieldSpec], prefix: str):
        self.specs = specs
        self.prefix = prefix
        self.params: dict = {}
        self.dropped: list[str] = []

    def param(self, value) -> str:
        name = f"{self.prefix}{len(self.params)}"
        self.params[name] = value
        return f"%({name})s"

    def compile(self, filters: Mapping, depth: int = 0) -> list[str]:
        if depth > MAX_AND_DEPTH:
            raise ValueError(f"filter '$and' nests more than {MAX_AND_DEPTH} levels")
        if not isinstance(filters, Mapping):
            raise ValueError(f"filter must be an object of field -> condition, got {type(filters).__name__}")
        clauses: list[str] = []
        for key, condition in filters.items():
            if key == "$and":
                if not isinstance(condition, list) or not all(isinstance(c, Mapping) for c in condition):
                    raise ValueError("filter '$and': expected a list of filter objects")
                for sub in condition:
                    clauses += self.compile(sub, depth + 1)
            elif key.startswith("$"):
                raise ValueError(f"filter operator {key!r} is not supported at the top level (only '$and')")
            elif key not in self.specs:
                self.dropped.append(key)
            else:
                clauses += self.field(self.specs[key], condition)
        return clauses

    def field(self, spec: FieldSpec, condition) -> list[str]:
        if isinstance(condition, Mapping):
            unknown = set(condition) - OPERATORS
            if unknown or not condition:
                raise ValueError(
                    f"filter on {spec.name!r}: unknown operator(s) {sorted(unknown)}; "
                    f"allowed: {sorted(OPERATORS)}"
                )
            return [self.operator(spec, op, value) for op, value in condition.items()]
        if isinstance(condition, list):
            return [self.operator(spec, "$contains" if spec.value_type == "list" else "$in", condition)]
        return [self.operator(spec, "$contains" if spec.value_type == "list" else "$eq", condition)]

    def operator(self, spec: FieldSpec, op: str, value) -> str:
        if isinstance(value, (list, tuple)) and len(value) > MAX_FILTER_VALUES:
            raise ValueError(f"filter on {spec.name!r}: {op} takes at most {MAX_FILTER_VALUES} values, "
                             f"got {len(value)}")
        if op in RANGE_OPS:
            if spec.value_type not in ("int", "float"):
                raise ValueError(f"filter on {spec.name!r}: {op} needs an int or float field")
            return self.compare(spec, RANGE_OPS[op], typed_value(spec, value))
        if op == "$eq":
            return self.equal(spec, [typed_value(spec, value)])
        if op == "$in":
            values = _as_list(value)
            if not values:
                return "FALSE"
            return self.equal(spec, [typed_value(spec, v) for v in values])
        # $contains: every value present (list fields; on other fields, any element).
        values = [typed_value(spec, v) for v in _as_list(value)]
        if not values:
            raise ValueError(f"filter on {spec.name!r}: $contains needs at least one value")
        return " AND ".join(self.equal(spec, [v]) for v in values)

    def path(self, spec: FieldSpec) -> str:
        key = variants_key(spec.name) if spec.person_name else spec.name
        return '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'

    def equal(self, spec: FieldSpec, values: list) -> str:
        if spec.name == YEAR_COLUMN and spec.value_type == "int":
            return f"c.year = ANY({self.param(values)})"
        if spec.person_name:
            values = [_name_key(v) for v in values]
        vars_ = {f"v{i}": v for i, v in enumerate(values)}
        test = " || ".join(f"@ == $v{i}" for i in range(len(values)))
        return f"jsonb_path_exists(c.metadata, {self.param(self.path(spec) + ' ? (' + test + ')')}, {self.param(json.dumps(vars_))}::jsonb)"

    def compare(self, spec: FieldSpec, sql_op: str, value) -> str:
        if spec.name == YEAR_COLUMN and spec.value_type == "int":
            return f"c.year {sql_op} {self.param(value)}"
        json_op = {">": ">", ">=": ">=", "<": "<", "<=": "<="}[sql_op]
        return (
            f"jsonb_path_exists(c.metadata, {self.param(self.path(spec) + ' ? (@ ' + json_op + ' $v)')}, "
            f"{self.param(json.dumps({'v': value}))}::jsonb)"
        )


def _name_key(value: str) -> str:
    # The same normalisation as domains.person_names: words stripped of ",.;", lower case.
    return " ".join(w.strip(",.;") for w in value.split()).lower()


def _as_list(value) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def typed_value(spec: FieldSpec, value):
    """``value`` as the field's type: an ``int`` (from an integral number or its decimal
    text, sign allowed), a finite ``float``, or a ``str`` (numbers as their text, for
    string fields).

    :raises ValueError: naming the field, for a value of another type, a bool, None, a
        list or object, or a string with a NUL character or a lone surrogate.
    """
    kind = spec.value_type
    if isinstance(value, bool) or value is None or isinstance(value, (list, dict, tuple)):
        raise ValueError(f"filter on {spec.name!r}: expected a value of type {kind}, got {value!r}")
    if kind == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, int):
            return value
        if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
            return int(value.strip())
        raise ValueError(f"filter on {spec.name!r}: expected an integer, got {value!r}")
    if kind == "float":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"filter on {spec.name!r}: expected a number, got {value!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"filter on {spec.name!r}: expected a finite number, got {value!r}")
        return number
    if isinstance(value, (int, float)) and kind == "string":
        return str(value)
    if not isinstance(value, str):
        raise ValueError(f"filter on {spec.name!r}: expected a string, got {value!r}")
    if refused(value):
        raise ValueError(f"filter on {spec.name!r}: a NUL character or a lone surrogate in {value!r}")
    return value


def compile_filter(filters: Mapping | None, specs: Mapping[str, FieldSpec] | Iterable[FieldSpec], prefix: str = "f") -> CompiledFilter:
    """Translate a DSL filter into SQL for one domain.

    :param filters: the DSL object (see module docstring); None or {} = no filter.
    :param specs: the domain's declared fields (name -> FieldSpec, or an iterable).
    :param prefix: parameter-name prefix, so several filters can share one query.
    :returns: CompiledFilter; its ``dropped`` lists undeclared fields (also logged).
    :raises ValueError: malformed value or unknown operator, naming the field.
    """
    if not isinstance(specs, Mapping):
        specs = {s.name: s for s in specs}
    if not filters:
        return CompiledFilter()
    compiler = _Compiler(specs, prefix)
    clauses = compiler.compile(filters)
    if compiler.dropped:
        logger.info("filter fields not declared by the domain, dropped: %s", ", ".join(compiler.dropped))
    sql = " AND ".join(f"({c})" for c in clauses) if clauses else "TRUE"
    return CompiledFilter(sql, compiler.params, compiler.dropped)

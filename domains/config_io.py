"""Import and export of the domain configuration in Klea's JSON shape.

::

    {"domains": {"<name>": {"description": "...",
                            "vector_stores": [{"name": "docs"}],
                            "bm25_stores": [{"name": "docs"}],
                            "filter_fields": [{"name": "year", "description": "...",
                                               "value_type": "int"}]}}}

A store listed under both ``vector_stores`` and ``bm25_stores`` is searched both ways.
Optional keys of ours: ``active``, ``default_k``, ``k_max``, ``k_inc``,
``min_relevance``, ``fusion``, ``fusion_alpha``, ``instructions``, ``examples`` (a list of
example questions) on a domain and ``person_name`` on a filter field.
Loading is idempotent: the file is authoritative for the filter fields of the domains
it names; stores are created or updated, never deleted (they hold data).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.db import transaction

from .models import Domain, FilterField, Store

DOMAIN_KNOBS = ("active", "default_k", "k_max", "k_inc", "min_relevance", "fusion", "fusion_alpha", "instructions")


class DomainConfigError(ValueError):
    """A malformed configuration; the message names the place (``domains.x.filter_fields[0]``)."""


@dataclass
class LoadSummary:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    stores: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _expect(value, kind, where: str):
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise DomainConfigError(f"{where}: expected {names}, got {type(value).__name__}")
    return value


def _validated(instance, where: str, exclude=None) -> None:
    try:
        instance.full_clean(exclude=exclude, validate_unique=False, validate_constraints=False)
    except ValidationError as exc:
        details = "; ".join(
            f"{name}: {' '.join(messages)}" for name, messages in exc.message_dict.items()
        )
        raise DomainConfigError(f"{where}: {details}") from None


def _store_modes(spec: dict, where: str) -> dict[str, str]:
    modes: dict[str, str] = {}
    for key, mode in (("vector_stores", Store.Mode.VECTOR), ("bm25_stores", Store.Mode.BM25)):
        for i, item in enumerate(_expect(spec.get(key, []), list, f"{where}.{key}")):
            item = _expect(item, dict, f"{where}.{key}[{i}]")
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise DomainConfigError(f"{where}.{key}[{i}].name: a non-empty string is required")
            modes[name] = Store.Mode.BOTH if name in modes and modes[name] != mode else mode
    return modes


def _load_filter_fields(domain: Domain, spec: dict, where: str) -> None:
    items = _expect(spec.get("filter_fields", []), list, f"{where}.filter_fields")
    seen = set()
    for i, item in enumerate(items):
        here = f"{where}.filter_fields[{i}]"
        item = _expect(item, dict, here)
        name = item.get("name")
        if name in seen:
            raise DomainConfigError(f"{here}.name: duplicate filter field {name!r}")
        seen.add(name)
        ff = FilterField.objects.filter(domain=domain, name=name).first() or FilterField(domain=domain)
        ff.name = name
        ff.description = item.get("description", "")
        ff.value_type = item.get("value_type", FilterField.ValueType.STRING)
        ff.person_name = bool(item.get("person_name", False))
        _validated(ff, here, exclude=["domain"])
        ff.save()
    FilterField.objects.filter(domain=domain).exclude(name__in=seen).delete()


@transaction.atomic
def load_domain_config(data) -> LoadSummary:
    """Create or update domains, filter fields and stores from ``data`` (all or nothing).

    :raises DomainConfigError: naming the first bad place; nothing is written then.
    """
    summary = LoadSummary()
    domains = _expect(_expect(data, dict, "top level").get("domains"), dict, "domains")
    for name, spec in domains.items():
        where = f"domains.{name}"
        spec = _expect(spec, dict, where)
        domain = Domain.objects.filter(name=name).first()
        (summary.updated if domain else summary.created).append(name)
        domain = domain or Domain(name=name)
        domain.description = spec.get("description", domain.description or "")
        for knob in DOMAIN_KNOBS:
            if knob in spec:
                setattr(domain, knob, spec[knob])
        if "examples" in spec:
            examples = _expect(spec["examples"], list, f"{where}.examples")
            if not all(isinstance(q, str) and "\n" not in q for q in examples):
                raise DomainConfigError(f"{where}.examples: expected a list of one-line questions")
            domain.examples = "\n".join(q.strip() for q in examples if q.strip())
        _validated(domain, where)
        domain.save()
        _load_filter_fields(domain, spec, where)
        for store_name, mode in _store_modes(spec, where).items():
            store = Store.objects.filter(name=store_name).select_related("domain").first()
            if store and store.domain_id != domain.id:
                raise DomainConfigError(
                    f"{where}: store {store_name!r} already belongs to domain {store.domain.name!r}"
                )
            store = store or Store(name=store_name, domain=domain)
            store.mode = mode
            _validated(store, f"{where} store {store_name!r}", exclude=["domain"])
            store.save()
            summary.stores.append(store_name)
        listed = set(_store_modes(spec, where))
        for orphan in domain.stores.exclude(name__in=listed).values_list("name", flat=True):
            summary.notes.append(f"store {orphan!r} of {name!r} is not in the file; kept")
    return summary


def dump_domain_config() -> dict:
    """The whole configuration in the shape :func:`load_domain_config` reads."""
    out = {}
    for domain in Domain.objects.prefetch_related("stores", "filter_fields"):
        stores = list(domain.stores.all())
        out[domain.name] = {
            "description": domain.description,
            "vector_stores": [{"name": s.name} for s in stores if s.uses_vector],
            "bm25_stores": [{"name": s.name} for s in stores if s.uses_bm25],
            "filter_fields": [
                {
                    "name": f.name,
                    "description": f.description,
                    "value_type": f.value_type,
                    **({"person_name": True} if f.person_name else {}),
                }
                for f in domain.filter_fields.all()
            ],
            **{knob: getattr(domain, knob) for knob in DOMAIN_KNOBS},
            **({"examples": domain.example_questions} if domain.examples else {}),
        }
    return {"domains": out}

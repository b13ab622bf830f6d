"""Per-word variants of person names, so a filter on part of a name matches.

Stored at ingest time in ``chunk.metadata["_<field>_variants"]`` for every filter field
declared with ``person_name=True``; the retrieval filter on such a field tests
membership in that list. Keys starting with ``_`` never reach the answer model.
"""

from __future__ import annotations

from collections.abc import Iterable

VARIANTS_KEY = "_{field}_variants"


def variants_key(field: str) -> str:
    """``"authors"`` -> ``"_authors_variants"``."""
    return VARIANTS_KEY.format(field=field)


def name_variants(names: str | Iterable[str]) -> list[str]:
    """Every name as written and lower-cased, then each of its words both ways.

    ``"Ankur Sinha"`` -> ``["Ankur Sinha", "ankur sinha", "Ankur", "Sinha", "ankur",
    "sinha"]``. Order is stable, duplicates removed; trailing commas and periods of
    words are dropped ("Sinha," -> "Sinha"), initials such as "A." kept as "A".
    """
    if isinstance(names, str):
        names = [names]
    out: list[str] = []
    seen: set[str] = set()

    def add(value: str) -> None:
        if value and value not in seen:
            seen.add(value)
            out.append(value)

    for name in names:
        name = " ".join(str(name).split())
        if not name:
            continue
        add(name)
        add(name.lower())
        words = [w.strip(",.;") for w in name.split()]
        for word in words:
            add(word)
        for word in words:
            add(word.lower())
    return out

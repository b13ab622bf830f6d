"""Filter DSL -> SQL: every operator, typing, undeclared fields, person names."""

import logging

import numpy as np
import pytest
from django.db import connection

from domains.models import Chunk, Document, Domain, FilterField, Store
from domains.person_names import name_variants
from domains.retrieval import FieldSpec, bm25_search, compile_filter, query_lexemes, retrieve, vector_search

pytestmark = pytest.mark.django_db

SPECS = [
    FieldSpec("year", "int"),
    FieldSpec("score", "float"),
    FieldSpec("journal", "string"),
    FieldSpec("keywords", "list"),
    FieldSpec("authors", "list", person_name=True),
]

ROWS = [  # (year, metadata)
    (2019, {"journal": "Nature", "score": 1.5, "keywords": ["GABA", "HH"], "authors": ["Ankur Sinha"]}),
    (2021, {"journal": "Science", "score": 2.5, "keywords": ["HH"], "authors": ["Padraig Gleeson", "A. Sinha"]}),
    (2023, {"journal": "Nature", "score": 3.0, "keywords": ["GABA"], "authors": ["Boris Marin"]}),
    (None, {"journal": "eLife", "keywords": []}),
    (2025, {"journal": 42, "score": "high"}),  # badly typed values never match, never raise
]


def unit(i):
    v = np.zeros(384, dtype=np.float32)
    v[0], v[1 + i] = 1.0, 0.1 * (i + 1)
    return v / np.linalg.norm(v)


@pytest.fixture
def store(db):
    domain = Domain.objects.create(name="filters", description="filters")
    for spec in SPECS:
        FilterField.objects.create(domain=domain, name=spec.name, value_type=spec.value_type, person_name=spec.person_name)
    store = Store.objects.create(name="filter-store", domain=domain)
    doc = Document.objects.create(store=store, file_name="f.md")
    ids = []
    for i, (year, metadata) in enumerate(ROWS):
        metadata = dict(metadata)
        if "authors" in metadata:
            metadata["_authors_variants"] = name_variants(metadata["authors"])
        chunk = Chunk.objects.create(
            store=store, document=doc, ordinal=i, text=f"neuron model number {i}", year=year,
            metadata=metadata, embedding=unit(i),
        )
        ids.append(chunk.id)
    return domain, store, ids


def matching(store, filters):
    compiled = compile_filter(filters, SPECS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.ordinal FROM domains_chunk c WHERE c.store_id = %(store)s AND {compiled.sql} ORDER BY c.ordinal",
            {"store": store.id, **compiled.params},
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.parametrize(
    "filters, expected",
    [
        ({}, [0, 1, 2, 3, 4]),
        ({"year": 2021}, [1]),
        ({"year": "2021"}, [1]),
        ({"year": "+2021"}, [1]),
        ({"year": [2019, 2023]}, [0, 2]),
        ({"year": {"$in": [2019, 2025]}}, [0, 4]),
        ({"year": {"$gte": 2020, "$lte": 2023}}, [1, 2]),
        ({"year": {"$gt": 2021}}, [2, 4]),
        ({"year": {"$lt": 2021}}, [0]),
        ({"score": 2.5}, [1]),
        ({"score": {"$gte": 2}}, [1, 2]),
        ({"score": {"$lt": 2.0}}, [0]),
        ({"journal": "Nature"}, [0, 2]),
        ({"journal": ["Science", "eLife"]}, [1, 3]),
        ({"journal": {"$in": ["Nature", "Cell"]}}, [0, 2]),
        ({"journal": 42}, []),  # a number on a string field is compared as text: "42" != 42
        ({"keywords": "GABA"}, [0, 2]),
        ({"keywords": {"$contains": ["GABA", "HH"]}}, [0]),
        ({"keywords": ["HH"]}, [0, 1]),
        ({"authors": "Sinha"}, [0, 1]),
        ({"authors": "sinha"}, [0, 1]),
        ({"authors": "Ankur Sinha"}, [0]),
        ({"authors": {"$contains": ["Gleeson", "Sinha"]}}, [1]),
        ({"authors": {"$in": ["Marin", "Gleeson"]}}, [1, 2]),
        ({"authors": "Nobody"}, []),
        ({"$and": [{"journal": "Nature"}, {"year": {"$gte": 2020}}]}, [2]),
        ({"journal": "Nature", "keywords": "HH"}, [0]),
        ({"year": {"$in": []}}, []),
    ],
)
def test_operators(store, filters, expected):
    _, store, _ = store
    assert matching(store, filters) == expected


def test_undeclared_fields_are_dropped_and_logged(store, caplog):
    _, store, _ = store
    with caplog.at_level(logging.INFO, logger="klea.retrieval"):
        compiled = compile_filter({"colour": "red", "$and": [{"shape": 1}, {"year": 2019}]}, SPECS)
    assert compiled.dropped == ["colour", "shape"]
    assert "filter fields not declared by the domain, dropped: colour, shape" in caplog.text
    assert matching(store, {"colour": "red"}) == [0, 1, 2, 3, 4]
    assert compile_filter({"colour": "red"}, SPECS).empty


@pytest.mark.parametrize(
    "filters, message",
    [
        ({"year": "twenty"}, "filter on 'year': expected an integer, got 'twenty'"),
        ({"year": 2020.5}, "filter on 'year': expected an integer, got 2020.5"),
        ({"year": "--2020"}, "filter on 'year': expected an integer, got '--2020'"),  # int() raised its own error
        ({"year": "²"}, "filter on 'year': expected an integer, got '²'"),
        ({"year": True}, "filter on 'year': expected a value of type int, got True"),
        ({"score": "abc"}, "filter on 'score': expected a number, got 'abc'"),
        ({"score": float("nan")}, "filter on 'score': expected a finite number, got nan"),
        ({"journal": {"$gte": "A"}}, "filter on 'journal': $gte needs an int or float field"),
        ({"journal": {"$regex": "N.*"}}, "filter on 'journal': unknown operator(s) ['$regex']"),
        ({"journal": None}, "filter on 'journal': expected a value of type string, got None"),
        ({"keywords": {"$contains": []}}, "filter on 'keywords': $contains needs at least one value"),
        ({"$or": [{"year": 1}]}, "filter operator '$or' is not supported at the top level"),
        ({"$and": {"year": 1}}, "filter '$and': expected a list of filter objects"),
        ("year=2020", "filter must be an object of field -> condition, got str"),
    ],
)
def test_malformed_filters_name_the_field(filters, message):
    with pytest.raises(ValueError) as info:
        compile_filter(filters, SPECS)
    assert str(info.value).startswith(message)


def test_filters_apply_before_ranking_in_both_lists(store):
    domain, store, ids = store
    compiled = compile_filter({"year": {"$gte": 2023}}, SPECS)
    assert [cid for cid, _ in bm25_search(store.id, query_lexemes("neuron model"), 1, where=compiled)] == [ids[2]]
    hits = vector_search(store.id, unit(0), 1, -1.0, where=compiled).hits
    assert [cid for cid, _ in hits] == [ids[2]]
    result = retrieve("neuron model", [domain], k=5, filters={"authors": "Sinha", "colour": "red"})
    assert sorted(c.chunk_id for c in result.results) == [ids[0], ids[1]]
    with pytest.raises(ValueError, match="filter on 'year': expected an integer"):
        retrieve("neuron model", [domain], filters={"year": "soon"})


def test_domain_without_the_field_is_unfiltered(store):
    domain, store, ids = store
    bare = Domain.objects.create(name="bare", description="no fields")
    store.domain = bare
    store.save()
    result = retrieve("neuron model", [bare], k=10, filters={"year": 2021})
    assert sorted(c.chunk_id for c in result.results) == sorted(ids)


def test_deep_and_and_unsafe_strings_are_value_errors():
    deep = {"year": 2000}
    for _ in range(8):
        deep = {"$and": [deep]}
    assert compile_filter(deep, SPECS, prefix="p").sql == "(c.year = ANY(%(p0)s))"
    with pytest.raises(ValueError, match=r"^filter '\$and' nests more than 8 levels$"):
        compile_filter({"$and": [deep]}, SPECS)
    for value in ("Nat\x00ure", "Nat\ud800ure", ["GABA", "\udfff"]):
        field = "keywords" if isinstance(value, list) else "journal"
        with pytest.raises(ValueError, match=rf"^filter on '{field}': a NUL character or a lone surrogate in "):
            compile_filter({field: value}, SPECS)

"""BM25 lexemes of scientific tokens: the index and queries agree on hyphenated, joined
and spaced forms, signed numbers, ligatures and invisible characters (issue 18), dotted
names; a question's slashed words (issue 13)."""

from functools import partial

import pytest

from domains.models import Chunk, Document, Domain, Store
from domains.retrieval import bm25_search, query_lexemes
from domains.retrieval.bm25 import indexed_statistics, recomputed_statistics


def _bm25_store(name: str, texts: list[str]) -> tuple[Store, list[int]]:
    """A BM25 store of one document whose chunks are ``texts``, in order; their ids."""
    domain = Domain.objects.create(name=name, description="d")
    store = Store.objects.create(name=name, domain=domain, mode=Store.Mode.BM25)
    doc = Document.objects.create(store=store, file_name="a.md")
    chunks = Chunk.objects.bulk_create(Chunk(store=store, document=doc, ordinal=i, text=t) for i, t in enumerate(texts))
    return store, [c.id for c in chunks]


def _found(store: Store, ids: list[int], query: str) -> list[int]:
    """The positions in ``ids`` of the chunks BM25 finds for ``query``, in position order."""
    return sorted(ids.index(cid) for cid, _ in bm25_search(store.id, query_lexemes(query), 10))


@pytest.mark.parametrize(
    "query, lexemes",
    [
        # hyphenated, joined and spaced forms share the parts; the first two also the joined form
        ("COVID-19", ["covid", "19", "covid19"]),
        ("covid19", ["covid", "19", "covid19"]),
        ("COVID 19", ["covid", "19"]),
        ("IL-6 levels", ["il", "6", "il6", "level"]),
        ("IL6", ["il", "6", "il6"]),
        ("IL\u20106", ["il", "6", "il6"]),  # U+2010 HYPHEN
        ("anti-IL-6", ["anti-il", "anti", "il", "6", "il6"]),
        ("SARS-CoV-2", ["sars-cov", "sar", "cov", "2", "cov2"]),
        ("SARS-CoV2", ["sars-cov", "sar", "cov", "2", "cov2"]),
        # a hyphen between numbers joins; a free-standing sign stays (U+2212 MINUS too)
        ("10-20 mg", ["10", "20", "mg"]),
        ("2020-03-15", ["2020", "03", "15"]),
        ("cooled to -5 C", ["cool", "-5", "c"]),
        ("cooled to \u22125 C", ["cool", "-5", "c"]),
        # ligatures and full-width digits fold (NFKC) and then stem
        ("\ufb01nding \ufb02uorescence", ["find", "fluoresc"]),
        ("\uff15 mg", ["5", "mg"]),
        ("p53 H1N1", ["p", "53", "p53", "h1n1"]),
        # soft hyphen and zero-width characters split no word
        ("infor\u00admation re\u200btrieval", ["inform", "retriev"]),
        ("\ufeffneu\u200cro\u200dnal net\u2060work", ["neuron", "network"]),
    ],
)
def test_query_lexemes_of_scientific_tokens(db, query, lexemes):
    assert query_lexemes(query) == lexemes


def test_query_lexemes_refuse_nul_and_lone_surrogates_and_the_transaction_stays_usable(db):
    for text in ("what \x00 is final flow", "what \ud800 flows"):
        with pytest.raises(ValueError, match="^text contains a NUL character or a lone surrogate$"):
            query_lexemes(text)
    assert query_lexemes("final flow") == ["final", "flow"]


def test_scientific_tokens_match_in_every_written_form(db):
    """Chunks written one way are found by queries written another (index and query
    lexemes agree); the joined form ranks the chunks that have it first."""
    store, ids = _bm25_store("sci-tokens", [
        "Patients with COVID-19 were admitted.",  # 0
        "Serum IL-6 rose in covid19 patients.",  # 1
        "IL6 and TNF were measured.",  # 2
        "The \ufb01brosis score was high.",  # 3
        "Samples were kept at \u22125 degrees for 10-20 days.",  # 4
        "Unrelated text about neurons.",  # 5
    ])

    found = partial(_found, store, ids)
    assert Chunk.objects.get(id=ids[0]).search_vector is not None
    assert str(Chunk.objects.get(id=ids[3]).search_vector) == "'fibrosi':2 'high':5 'score':3"
    for query in ["COVID-19", "covid19", "COVID 19", "Covid\u201019"]:
        assert sorted(found(query)) == [0, 1], query
    for query in ["IL-6", "IL6", "il 6"]:
        assert sorted(found(query)) == [1, 2], query
    assert found("fibrosis") == [3] and found("\ufb01brosis") == [3]
    assert found("-5 degrees") == [4] and found("20 days") == [4]
    Chunk.objects.filter(id=ids[5]).update(text="Unrelated infor\u00admation about neu\u200bron\ufeffs.")
    assert found("information") == [5] and found("neurons") == [5] and found("infor\u00admation") == [5]
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


@pytest.mark.parametrize(
    "query, lexemes",
    [
        # a dotted name gives its parts (PostgreSQL alone kept "dataarray.ffill" whole, and
        # read "xarray.open_dataset" as xarray.open + dataset)
        ("DataArray.ffill", ["dataarray", "ffill"]),
        ("How do I use xarray.open_dataset(path)?", ["use", "xarray", "open", "dataset", "path"]),
        ("ds.sel(time=x).mean()", ["ds", "sel", "time", "x", "mean"]),
        ("np.float64", ["np", "float", "64", "float64"]),
        ("The end.Next", ["end", "next"]),
        # numbers, versions, abbreviations and a one-letter attribute stay as PostgreSQL reads them
        ("3.14 and v1.2.3", ["3.14", "v", "1", "v1.2.3"]),
        ("e.g. U.S.A. Fig.2", ["e.g", "u.s.a", "fig.2"]),
        ("ds.x", ["ds.x"]),
        # so do URLs, paths and e-mail addresses
        ("see https://docs.xarray.dev/en/xarray.open_dataset.html",
         ["see", "docs.xarray.dev/en/xarray.open_dataset.html", "docs.xarray.dev", "/en/xarray.open_dataset.html"]),
        ("docs/retrieval.md", ["docs/retrieval.md"]),
        ("mail user@example.org", ["mail", "user@example.org"]),
    ],
)
def test_query_lexemes_of_dotted_names(db, query, lexemes):
    assert query_lexemes(query) == lexemes


@pytest.mark.parametrize(
    "query, lexemes",
    [
        # two words joined by a slash: the slashed lexeme (PostgreSQL reads it as a path), then each word
        ("Which safety/guard model?", ["safety/guard", "model", "safeti", "guard"]),
        ("encode/decode datetimes", ["encode/decode", "datetim", "encod", "decod"]),
        ("reading/writing netCDF3", ["reading/writing", "netcdf", "3", "netcdf3", "read", "write"]),
        ("and/or", ["and/or"]),  # both words are stop words
        # a one-letter part is no word ("I/O"); a longer path, a file name or a URL stays whole
        ("I/O engines", ["i/o", "engin"]),
        ("see docs/api.md", ["see", "docs/api.md"]),
        ("ci/requirements/min-all-deps.yml", ["ci/requirements/min-all-deps.yml"]),
        ("https://x.org/ab/cd", ["x.org/ab/cd", "x.org", "/ab/cd"]),
        ("1/2 cup", ["1/2", "cup"]),
    ],
)
def test_query_lexemes_of_slashed_words(db, query, lexemes):
    assert query_lexemes(query) == lexemes


def test_a_question_with_slashed_words_finds_each_word(db):
    """A question writing two words with a slash between them finds the chunks holding
    either word, and the chunks writing the same slashed pair; chunks keep the pair whole."""
    store, ids = _bm25_store("slashed", [
        "Optional: recommended to encode/decode datetimes.",  # 0
        "The guard model screens questions.",  # 1
        "Paths such as docs/api.md are kept whole.",  # 2
        "Unrelated text about neurons.",  # 3
    ])

    found = partial(_found, store, ids)
    assert str(Chunk.objects.get(id=ids[0]).search_vector) == "'datetim':5 'encode/decode':4 'option':1 'recommend':2"
    assert found("safety/guard") == [1]
    assert found("encode/decode") == [0]
    assert found("decode") == []  # the chunk's pair is one lexeme (docs/retrieval.md, "Tokens")
    assert found("docs/api.md") == [2] and found("api") == []
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)


def test_dotted_names_are_found_by_their_parts(db):
    """A chunk that writes a method with its class or module is found by the method's
    name alone, and by the dotted form it does not use (index and query lexemes agree)."""
    store, ids = _bm25_store("dotted", [
        "Fill the gaps forward with DataArray.ffill.",  # 0
        "Read a netCDF file with xr.open_dataset(path).",  # 1
        "Gaps are filled with ffill, and files read with open_dataset.",  # 2
        "See https://docs.xarray.dev/en/stable/generated/xarray.DataArray.bfill.html for more.",  # 3
        "Unrelated text about neurons.",  # 4
    ])

    found = partial(_found, store, ids)
    assert str(Chunk.objects.get(id=ids[0]).search_vector) == "'dataarray':6 'ffill':7 'fill':1 'forward':4 'gap':3"
    assert found("ffill") == [0, 2]
    ranked = [ids.index(cid) for cid, _ in bm25_search(store.id, query_lexemes("DataArray.ffill"), 10)]
    assert ranked == [0, 2]  # the chunk with both parts first
    assert found("open_dataset") == [1, 2]
    assert found("xarray.open_dataset") == [1, 2]
    assert found("bfill") == []  # a name inside a URL is not split
    assert indexed_statistics(store.id) == recomputed_statistics(store.id)

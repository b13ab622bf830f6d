"""Reference-manager libraries (BibTeX, CSL-JSON) read from real export formats, matched
to files, layered over the cascade, and the three-way merge of map sources. Builds with
libraries (the precedence rule applied at store): tests/test_library_builds.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.metadata.layers import merge, overlay
from ingestion.metadata.library import LibraryError, Record, file_field, read_library
from ingestion.metadata.matching import match_records

DATA = Path(__file__).parent / "data" / "libraries"


def record(key: str, path: Path):
    return next(r for r in read_library(path) if r.key == key)


def test_zotero_bibtex_export():
    records = read_library(DATA / "zotero.bib")
    assert len(records) == 20
    sundstrom = records[0]
    assert (sundstrom.key, sundstrom.library, sundstrom.line) == ("sundstrom_stressful_2014", "zotero.bib", 1)
    assert sundstrom.fields == {  # LaTeX accents decoded, month macro parsed, keywords split
        "title": "Stressful life events are not associated with the development of dementia",
        "authors": ["Anna Sundström", "Michael Rönnlund", "Rolf Adolfsson", "Lars-Göran Nilsson"],
        "year": 2014, "journal": "International Psychogeriatrics", "doi": "10.1017/S1041610213001804",
        "keywords": ["dementia", "stress", "life events", "cohort study"],
    }
    assert sundstrom.files == ["/home/ana/Zotero/storage/8XK2M3QF/sundstrom2014_intpsychogeriatr.pdf"]
    webb = record("webb_vespa_2017", DATA / "zotero.bib")
    assert webb.fields["title"] == "VESPA: Very large-scale Evolutionary and Selective Pressure Analyses"  # {Protected}
    assert webb.fields["authors"] == ["Andrew E. Webb", "Thomas A. Walsh", "Mary J. O'Connell"]
    arute = record("arute_quantum_2019", DATA / "zotero.bib")
    assert arute.files == ["files/9/arute2019_nature.pdf", "files/10/s41586-019-1666-5.html"]
    assert len(arute.fields["authors"]) == 77 and arute.fields["authors"][45] == "Salvatore Mandrà"
    assert arute.fields["abstract"].startswith("A 53-qubit superconducting processor")
    shor = record("shor_polynomial-time_1996", DATA / "zotero.bib")  # @misc arXiv entry
    assert shor.fields == {
        "title": "Polynomial-Time Algorithms for Prime Factorization and Discrete Logarithms on a Quantum Computer",
        "authors": ["Peter W. Shor"], "year": 1996, "keywords": ["Quantum Physics"],
        "url_arxiv": "https://arxiv.org/abs/quant-ph/9508027",
    }
    assert record("zeng_heavy_1994", DATA / "zotero.bib").fields["authors"] == ["J. Zeng", "J. W. Van Orden", "W. Roberts"]
    assert record("abbott_observation_2016", DATA / "zotero.bib").fields["authors"] == ["B. P. Abbott et al."]
    assert record("bender_level_2004", DATA / "zotero.bib").fields["authors"] == [
        "Michael A. Bender", "Martín Farach-Colton"]  # {\'\i}


def test_jabref_export_groups_and_file_fields():
    law, kneer, ikram, bender = read_library(DATA / "jabref.bib")
    assert law.fields == {
        "title": "Arbitrary Control of a Quantum Electromagnetic Field", "authors": ["C. K. Law", "J. H. Eberly"],
        "year": 1996, "journal": "Physical Review Letters", "doi": "10.1103/PhysRevLett.76.1055",
        "keywords": ["quantum state engineering", "Jaynes-Cummings"], "collections": ["Quantum optics", "Cavity QED"],
    }
    assert (law.line, law.files) == (3, ["papers/law1996_prl.pdf"])
    assert kneer.files == ["C:\\Users\\kim\\papers\\kneer1998_pra.pdf"]  # "\:" and "\\" escapes
    assert ikram.files == ["supp/ikram2002_supplement.pdf", "ikram2002_pra.pdf"]  # two attachments
    assert bender.files == ["D:/Mendeley Desktop/bender2004_tcs.pdf"]  # Mendeley's $\backslash$
    assert bender.fields["authors"] == ["Michael A. Bender", "Martín Farach-Colton"]  # UTF-8 as written


def test_csl_json_export():
    fischer, dijkstra, wickham, jordan, lynch = read_library(DATA / "zotero.json")
    assert (fischer.key, fischer.line) == ("http://zotero.org/users/local/x9Qe2bC7/items/7VJ4RZ2M", 3)
    assert fischer.fields == {
        "title": "Impossibility of distributed consensus with one faulty process",
        "authors": ["Michael J. Fischer", "Nancy A. Lynch", "Michael S. Paterson"], "year": 1985,
        "journal": "Journal of the ACM", "doi": "10.1145/3149.214121",
        "abstract": "No completely asynchronous consensus protocol can tolerate even a single unannounced process death.",
    }
    assert dijkstra.fields["keywords"] == ["mutual exclusion", "concurrency"]
    assert (wickham.fields["year"], jordan.fields["doi"]) == (2014, "10.1016/0021-9991(86)90093-8")
    assert lynch.fields == {"title": "A Hundred Impossibility Proofs for Distributed Computing",
                            "authors": ["Nancy Lynch"], "year": 1989}  # "issued": {"raw": "August 1989"}


@pytest.mark.parametrize("name, message", [
    ("unbalanced.bib", "unbalanced.bib: line 7: @article{broken_2002, ... does not parse (unbalanced braces?): "
                       "Unexpected block start: `@article`. Was still looking for field-value closing `,` or `}`"),
    ("duplicate.bib", "duplicate.bib: line 6: duplicate entry key 'smith_cells_2014' (first at line 1)"),
    ("latin1.bib", "latin1.bib: line 7: not UTF-8 (byte 0xe9); export the library as UTF-8"),
    ("duplicate-id.json", "duplicate-id.json: line 4: duplicate item id 'item-1' (first at line 2)"),
    ("broken.json", "broken.json: line 3: not valid JSON (Expecting ',' delimiter, column 46)"),
])
def test_malformed_libraries_are_refused_whole_naming_the_line(name, message):
    with pytest.raises(LibraryError) as caught:
        read_library(DATA / "malformed" / name)
    assert str(caught.value) == message


@pytest.mark.parametrize("name, raw, message", [
    ("deep.json", b"[" * 100_000 + b"]" * 100_000, "deep.json: braces or JSON nested too deeply; not a "
     "reference-manager export"),
    ("deep.bib", b"@article{k, title={" + b"{" * 5000 + b"x" + b"}" * 5000 + b"}}\n", "deep.bib: braces or JSON "
     "nested too deeply; not a reference-manager export"),
    ("macros.bib", b"@article{k, title={" + b"\\emph{" * 3000 + b"x" + b"}" * 3000 + b"}}\n", "macros.bib: braces or "
     "JSON nested too deeply; not a reference-manager export"),
    ("nul.bib", b"@book{a, title={Fine}}\n\n@article{k\x00ey, title={a\x00b}}\n", "nul.bib: line 3: entry 'k?ey' "
     "holds a NUL character or a lone surrogate"),
    ("surrogate.json", b'[{"id": "a", "title": "ok"},\n {"id": "b", "author": [{"family": "\\ud800"}]}]',
     "surrogate.json: line 2: entry 'b' holds a NUL character or a lone surrogate"),
])
def test_hostile_libraries_are_refused_with_a_library_error(tmp_path, name, raw, message):
    """Deep nesting crashed the parsers (RecursionError); NUL and lone surrogates passed
    into records the database cannot store."""
    (tmp_path / name).write_bytes(raw)
    with pytest.raises(LibraryError) as caught:
        read_library(tmp_path / name)
    assert str(caught.value) == message


def test_csl_json_lines_of_ids_written_as_utf8(tmp_path):
    """The ids' lines come from one pass over the text (was one scan per item, minutes for
    a 20,000-item export, bench/library_match.py); an id written as UTF-8 rather than
    \\u-escaped is found too (it was reported at line 1)."""
    path = tmp_path / "utf8.json"
    path.write_text('[\n  {"id": "a", "title": "A"},\n  {"id": 5},\n  {\n    "id": "ré",\n    "title": "B"\n  },\n'
                    '  {"id": "ré"}\n]', encoding="utf-8")
    with pytest.raises(LibraryError) as caught:
        read_library(path)
    assert str(caught.value) == "utf8.json: line 8: duplicate item id 'ré' (first at line 5)"
    path.write_text(path.read_text(encoding="utf-8").replace('  {"id": "ré"}', '  {"id": "z"}'), encoding="utf-8")
    assert [(r.key, r.line) for r in read_library(path)] == [("a", 2), ("5", 3), ("ré", 5), ("z", 8)]


def test_bom_and_a_declared_latin1_encoding_are_read():
    (bom,) = read_library(DATA / "malformed" / "bom.bib")
    assert bom.fields == {"title": "Möller's BOM test", "authors": ["Jürgen Möller"], "year": 2020}  # from `date`
    (latin,) = read_library(DATA / "malformed" / "latin1-declared.bib")  # JabRef's "% Encoding: ISO-8859-1"
    assert latin.fields == {"title": "Café culture", "authors": ["Anna Müller"], "year": 2000}


@pytest.mark.parametrize("value, paths", [
    ("Full Text PDF:/home/a/Zotero/storage/X/a.pdf:application/pdf", ["/home/a/Zotero/storage/X/a.pdf"]),
    (":a.pdf:PDF;Snapshot:b.html:text/html", ["a.pdf", "b.html"]),
    (":C\\:\\\\papers\\\\a\\;b.pdf:PDF", ["C:\\papers\\a;b.pdf"]),
    ("/x/a.pdf;/y/b.pdf", ["/x/a.pdf", "/y/b.pdf"]),  # Better BibTeX: plain paths
    ("C:/papers/a.pdf", ["C:/papers/a.pdf"]),
    ("", []),
])
def test_file_field_formats(value, paths):
    assert file_field(value) == paths


def test_matching_by_file_field_then_doi_then_title():
    records = [
        Record("a", "l.bib", 1, {"title": "Alpha"}, ["/zotero/storage/K/sub/alpha.pdf"]),
        Record("b", "l.bib", 2, {"title": "Beta", "doi": "10.1000/B"}),
        Record("c", "l.bib", 3, {"title": "Gamma rays in the {early} universe"}),
        Record("d", "l.bib", 4, {"title": "Delta"}),
        Record("e", "l.bib", 5, {"title": "Epsilon and something else entirely"}),
        Record("b2", "l.json", 1, {"title": "Beta (another export)", "doi": "10.1000/b"}),
    ]
    files = {
        "sub/alpha.pdf": {"title": "Wrong title"},
        "beta.pdf": {"title": "Unrelated", "doi": "10.1000/b"},  # DOI identity ignores case
        "gamma.pdf": {"title": "Gamma Rays in the Early Universe."},
        "epsilon.pdf": {"title": "Epsilon"},  # too far from the record's title
    }
    matching = match_records(records, files)
    assert {name: (r.key, rule) for name, (r, rule) in matching.files.items()} == {
        "sub/alpha.pdf": ("a", "file"), "beta.pdf": ("b", "doi"), "gamma.pdf": ("c", "title")}
    assert [r.key for r in matching.unmatched_records] == ["d", "e"]
    assert [(r.key, twin.key) for r, twin in matching.duplicates] == [("b2", "b")]  # the same work twice
    assert matching.unmatched_files == ["epsilon.pdf"]
    assert matching.counts() == {"file": 1, "doi": 1, "title": 1}


def test_overlay_and_three_way_merge():
    cascade = {"title": "T from PDF", "authors": ["A B"], "doi": "10.1/x", "url_1": "https://x.org",
               "_metadata_complete": False, "_sources": ["pdf-info", "regex"]}
    library = {"library": "refs.bib", "key": "k", "match": "doi",
               "fields": {"title": "Curated", "authors": ["Ann Bee"], "year": 2001, "doi": "10.1/X"}}
    assert overlay(cascade, library) == {
        "title": "Curated", "authors": ["Ann Bee"], "doi": "10.1/X", "url_1": "https://x.org",
        "_metadata_complete": True, "_sources": ["library", "pdf-info", "regex"], "year": 2001,
        "url_doi": "https://doi.org/10.1/X", "_library": "refs.bib: k (matched by doi)"}
    ours = {"DEFAULT": {"title": "T", "year": 2017, "journal": "J (edited)"}, "A": {}}
    base = {"DEFAULT": {"title": "T", "year": 2019, "journal": "J"}, "A": {}, "B": {}}
    theirs = {"DEFAULT": {"title": "T", "year": 2018, "journal": "J"}, "A": {}, "C": {"x": 1}}
    result = merge(ours, base, theirs)
    assert result.entries == {"DEFAULT": {"title": "T", "year": 2018, "journal": "J (edited)"}, "A": {}, "C": {"x": 1}}
    assert [c.line() for c in result.conflicts] == ["[DEFAULT] year: 2017 -> 2018"]
    assert [c.line() for c in result.changes] == ["[DEFAULT] year: 2017 -> 2018", "[C] x: (none) -> 1"]


# --- the workflow: folder, store, filters, incremental re-import --------------------------

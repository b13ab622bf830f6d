"""Reference-manager libraries (BibTeX, CSL-JSON) read from real export formats, matched
to files, layered over the cascade; one precedence rule for a file's map sources
(library, map file, admin edits), applied at store without re-embedding."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.test import override_settings

from domains.models import Chunk, Document, Domain, FilterField, MetadataEntry, Store
from domains.retrieval import retrieve
from domains.signals import map_edited
from ingestion.chunk.step import chunk_directory
from ingestion.metadata.layers import match_records, merge, overlay
from ingestion.metadata.library import LibraryError, Record, file_field, read_library
from ingestion.metadata.map_lint import map_lint
from ingestion.models import IngestionJob, StagedFile
from ingestion.store.step import store_directory

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


PAPER = "# Cells in the {name}\n\nNeurons fire {what}.\n\n## Methods\n\nWe recorded {name} cells.\n"
BIB = r"""@article{smith_cells_2014,
  title = {Cells in the {Cortex}: a {{LaTeX}} study},
  author = {Sm{\"o}rgrav, Anna and de la Cruz, Jos{\'e}},
  journal = {Journal of {Neuro} Things},
  month = feb,
  year = {2014},
  keywords = {cortex, electrophysiology},
  groups = {Lab papers, Review queue},
  abstract = {We describe cells of the cortex.},
  file = {Full Text PDF:/home/u/Zotero/storage/AB12/cortex.md:text/markdown},
}

@article{lee_hippocampus_2019,
  title = {Cells in the hippocampus},
  author = {Lee, Kim},
  year = {2019},
  keywords = {hippocampus},
  groups = {Lab papers},
}

@misc{nobody_2020,
  title = {A record with no file here},
  year = {2020},
}
"""


@pytest.fixture
def domain(db):
    domain = Domain.objects.create(name="library", description="Library tests")
    FilterField.objects.create(domain=domain, name="authors", value_type="list", person_name=True)
    FilterField.objects.create(domain=domain, name="keywords", value_type="list")
    FilterField.objects.create(domain=domain, name="collections", value_type="list")
    FilterField.objects.create(domain=domain, name="year", value_type="int")
    return domain


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "papers"
    root.mkdir()
    (root / "cortex.md").write_text(PAPER.format(name="Cortex", what="often"), encoding="utf-8")
    (root / "hippo.md").write_text(PAPER.format(name="hippocampus", what="rarely"), encoding="utf-8")
    (root / "other.md").write_text("# Something else\n\nNo record for this one.\n", encoding="utf-8")
    (root / "refs.bib").write_text(BIB, encoding="utf-8")
    return root


def run(*args) -> str:
    out = StringIO()
    call_command("stores", *args, "--no-progress", stdout=out, stderr=StringIO()) if args[0] in (
        "chunk", "store", "build") else call_command("stores", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_library_in_the_folder_fills_the_map_and_the_filters(domain, folder):
    output = run("chunk", str(folder))
    assert "library refs.bib: 3 record(s)" in output
    assert "library matches: 2 file(s) (file 1, doi 0, title 1)" in output
    assert "library records matching no file (1):\n  refs.bib: nobody_2020 (line 21): A record with no file here" in output
    assert "files matching no library record (1):\n  other.md" in output
    cortex = StagedFile.objects.get(directory=str(folder), file_name="cortex.md")
    assert cortex.metadata_map["DEFAULT"] == {
        "title": "Cells in the Cortex: a LaTeX study", "authors": ["Anna Smörgrav", "José de la Cruz"],
        "year": 2014, "journal": "Journal of Neuro Things", "keywords": ["cortex", "electrophysiology"],
        "collections": ["Lab papers", "Review queue"], "abstract": "We describe cells of the cortex.",
        "_metadata_complete": True, "_sources": ["library"], "_library": "refs.bib: smith_cells_2014 (matched by file)",
    }
    hippo = StagedFile.objects.get(directory=str(folder), file_name="hippo.md")
    assert hippo.metadata_map["DEFAULT"]["_library"] == "refs.bib: lee_hippocampus_2019 (matched by title)"
    template = json.loads((folder / "metadata-map.template.json").read_text(encoding="utf-8"))
    assert template["cortex.md"]["DEFAULT"]["year"] == 2014
    run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    chunk = Chunk.objects.filter(document__file_name="cortex.md").order_by("ordinal").first()
    assert "abstract" not in chunk.metadata  # on the DEFAULT entry only, not in every chunk
    assert Document.objects.get(file_name="cortex.md").metadata["abstract"] == "We describe cells of the cortex."
    assert (chunk.year, chunk.metadata["collections"], chunk.metadata["keywords"]) == (
        2014, ["Lab papers", "Review queue"], ["cortex", "electrophysiology"])
    found = retrieve("cells", [domain], k=10, filters={"collections": "Review queue"})
    assert {c.file_name for c in found.results} == {"cortex.md"}
    found = retrieve("cells", [domain], k=10, filters={"collections": "Lab papers", "keywords": ["hippocampus"]})
    assert {c.file_name for c in found.results} == {"hippo.md"}
    found = retrieve("cells", [domain], k=10, filters={"authors": "Smörgrav"})
    assert {c.file_name for c in found.results} == {"cortex.md"}


def test_a_changed_record_is_reapplied_without_reembedding(domain, folder):
    run("build", str(folder), "--collection", "lib-store", "--domain", "library")
    before = {c.id: np.array(c.embedding) for c in Chunk.objects.filter(document__file_name="hippo.md")}
    (folder / "refs.bib").write_text(BIB.replace("year = {2019}", "year = {2018}"), encoding="utf-8")
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert "  map re-applied         1\n" in output and "  unchanged              2\n" in output
    assert "hippo.md: map applied [DEFAULT] year: 2019 -> 2018" in output
    after = Chunk.objects.filter(document__file_name="hippo.md")
    assert {c.id for c in after} == set(before)  # the same rows: nothing was re-embedded
    assert all(np.array_equal(np.array(c.embedding), before[c.id]) for c in after)
    assert {c.year for c in after} == {2018}
    # the library leaves the folder: its fields leave the maps, documents stay
    (folder / "refs.bib").unlink()
    run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert Document.objects.filter(store__name="lib-store").count() == 3
    assert Document.objects.get(file_name="cortex.md").metadata == {"title": "Cells in the Cortex"}


def test_an_edited_map_file_is_applied_on_every_store(domain, folder):
    """The reported workflow: chunk, copy the template to metadata-map.json, edit, store;
    edit again (2019 -> 2018) and store, with or without --force."""
    (folder / "refs.bib").unlink()
    run("chunk", str(folder))
    data = json.loads((folder / "metadata-map.template.json").read_text(encoding="utf-8"))
    data["hippo.md"]["DEFAULT"]["year"] = 2019
    edited = folder / "metadata-map.json"
    edited.write_text(json.dumps(data), encoding="utf-8")
    run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert set(Chunk.objects.filter(document__file_name="hippo.md").values_list("year", flat=True)) == {2019}
    data["hippo.md"]["DEFAULT"]["year"] = 2018
    edited.write_text(json.dumps(data), encoding="utf-8")
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert "imported metadata-map.json: 1 file(s) changed" in output
    assert "hippo.md: map applied [DEFAULT] year: 2019 -> 2018" in output
    assert set(Chunk.objects.filter(document__file_name="hippo.md").values_list("year", flat=True)) == {2018}
    data["hippo.md"]["DEFAULT"]["year"] = 2017
    edited.write_text(json.dumps(data), encoding="utf-8")
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library", "--force")
    assert "  stored                 3\n" in output
    assert set(Chunk.objects.filter(document__file_name="hippo.md").values_list("year", flat=True)) == {2017}
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert "  unchanged              3\n" in output  # nothing changed since: nothing applied


def test_a_map_file_placed_before_the_first_build_is_applied(domain, folder):
    (folder / "metadata-map.json").write_text(json.dumps({"other.md": {"DEFAULT": {
        "title": "Something else", "year": 2001, "collections": ["Misc"]}}}), encoding="utf-8")
    run("build", str(folder), "--collection", "lib-store", "--domain", "library")
    assert Document.objects.get(file_name="other.md").metadata == {
        "title": "Something else", "year": 2001, "collections": ["Misc"]}
    assert set(Chunk.objects.filter(document__file_name="other.md").values_list("year", flat=True)) == {2001}


def test_admin_edits_survive_and_a_conflict_is_reported(domain, folder):
    run("build", str(folder), "--collection", "lib-store", "--domain", "library")
    document = Document.objects.get(file_name="hippo.md")
    entry = MetadataEntry.objects.get(document=document, heading_key="DEFAULT")
    entry.values = {**entry.values, "journal": "Hippocampus (admin)", "year": 2020}
    entry.save()
    map_edited(document)
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library", "--force")
    assert Document.objects.get(file_name="hippo.md").metadata["year"] == 2020  # nothing else changed: kept
    assert "conflict" not in output
    (folder / "refs.bib").write_text(BIB.replace("year = {2019}", "year = {2018}"), encoding="utf-8")
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert ("hippo.md: conflict: [DEFAULT] year: admin edit 2020 -> 2018 (the map changed since the last store; "
            "the change wins)") in output
    metadata = Document.objects.get(file_name="hippo.md").metadata
    assert (metadata["year"], metadata["journal"]) == (2018, "Hippocampus (admin)")


def test_a_bad_library_applies_nothing_and_names_the_line(domain, folder, tmp_path):
    bad = tmp_path / "bad.bib"
    shutil.copy(DATA / "malformed" / "unbalanced.bib", bad)
    with pytest.raises(CommandError, match=r"^bad.bib: line 7: @article\{broken_2002, \.\.\. does not parse"):
        run("chunk", str(folder), "--library", str(bad))
    assert not StagedFile.objects.filter(directory=str(folder)).exists()  # refused before any work
    run("chunk", str(folder))
    (folder / "refs.bib").write_text(BIB.replace("year = {2019},", "year = {2018"), encoding="utf-8")
    with pytest.raises(CommandError, match=r"^library refused: refs.bib: line 13: @article\{lee_hippocampus_2019"):
        run("chunk", str(folder))
    hippo = StagedFile.objects.get(directory=str(folder), file_name="hippo.md")
    assert hippo.metadata_map["DEFAULT"]["year"] == 2019  # the earlier library's values stay
    report = map_lint(folder)
    assert report.fatal and list(report.sections)[0] == "libraries refused, nothing of them applied (fatal)"


def test_library_option_is_remembered_and_corpus_pdfs_match(domain, tmp_path):
    """--library FILE outside the folder; JabRef's file fields and DOIs match shared PDFs."""
    from tests.conftest import corpora_path

    folder = tmp_path / "pdfs"
    (folder / "papers").mkdir(parents=True)
    for name in ("law1996_prl.pdf", "ikram2002_pra.pdf"):
        shutil.copy(corpora_path("pdfs", name), folder / "papers" / name)
    output = run("chunk", str(folder), "--library", str(DATA / "jabref.bib"))
    assert "library matches: 2 file(s) (file 2, doi 0, title 0)" in output
    law = StagedFile.objects.get(directory=str(folder), file_name="papers/law1996_prl.pdf").metadata_map["DEFAULT"]
    assert (law["title"], law["authors"], law["year"], law["doi"], law["collections"], law["_sources"][0]) == (
        "Arbitrary Control of a Quantum Electromagnetic Field", ["C. K. Law", "J. H. Eberly"], 1996,
        "10.1103/PhysRevLett.76.1055", ["Quantum optics", "Cavity QED"], "library")
    assert "library matches: 2 file(s)" in "\n".join(map_lint(folder).lines())  # remembered without --library


def test_admin_upload_of_a_library_beside_the_files(domain, tmp_path, admin_client):
    store = Store.objects.create(name="upload-lib", domain=domain)
    upload = {"store": store.pk, "max_tokens": 450, "ocr": "auto"}
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "uploads"):
        admin_client.post("/admin/ingestion/ingestionjob/upload/", {**upload, "files": [
            SimpleUploadedFile("cortex.md", PAPER.format(name="Cortex", what="often").encode())]})
        assert Document.objects.get(store=store, file_name="cortex.md").metadata == {"title": "Cells in the Cortex"}
        bad = admin_client.post("/admin/ingestion/ingestionjob/upload/", {**upload, "files": [
            SimpleUploadedFile("refs.bib", BIB.replace("year = {2019},", "year = {2018").encode())]})
        assert "refs.bib: line 13: @article{lee_hippocampus_2019, ... does not parse" in bad.content.decode()
        assert not (tmp_path / "uploads" / "upload-lib" / "refs.bib").exists()
        response = admin_client.post("/admin/ingestion/ingestionjob/upload/", {**upload, "files": [
            SimpleUploadedFile("refs.bib", BIB.encode())]})
    assert response.status_code == 302
    job = IngestionJob.objects.latest("pk")
    assert (job.kind, job.status, job.outcomes) == ("metadata", "succeeded", {"cortex.md": "metadata"})
    metadata = Document.objects.get(store=store, file_name="cortex.md").metadata
    assert (metadata["title"], metadata["year"], metadata["_sources"]) == (
        "Cells in the Cortex: a LaTeX study", 2014, ["library"])
    assert set(Chunk.objects.filter(document__store=store).values_list("year", flat=True)) == {2014}


def test_admin_upload_of_files_with_their_library_reports_each_match(domain, tmp_path, admin_client):
    """Uploaded together, the library is matched as each file is chunked; the job says so
    per file, not the "0 matches" of the pass made before any of them was chunked."""
    store = Store.objects.create(name="upload-both", domain=domain)
    upload = {"store": store.pk, "max_tokens": 450, "ocr": "auto"}
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "uploads"):
        response = admin_client.post("/admin/ingestion/ingestionjob/upload/", {**upload, "files": [
            SimpleUploadedFile("cortex.md", PAPER.format(name="Cortex", what="often").encode()),
            SimpleUploadedFile("refs.bib", BIB.encode())]})
    assert response.status_code == 302
    job = IngestionJob.objects.latest("pk")
    assert (job.kind, job.status, job.outcomes) == ("build", "succeeded", {"cortex.md": "stored"})
    assert "cortex.md: library record refs.bib: smith_cells_2014 (matched by file)" in job.messages
    assert not [m for m in job.messages if m.startswith("library matches:")]
    assert Document.objects.get(store=store, file_name="cortex.md").metadata["_library"] == (
        "refs.bib: smith_cells_2014 (matched by file)")


def test_queued_build_applies_the_library_per_file_and_a_gone_library_is_forgotten(domain, folder, tmp_path):
    outside = tmp_path / "elsewhere.bib"
    (folder / "refs.bib").rename(outside)
    output = run("build", str(folder), "--collection", "lib-store", "--domain", "library", "--async",
                 "--library", str(outside))
    assert output.startswith("queued 3 file(s) as job ")  # eager without Redis: done by now
    metadata = Document.objects.get(file_name="cortex.md").metadata
    assert (metadata["year"], metadata["_library"]) == (2014, "elsewhere.bib: smith_cells_2014 (matched by file)")
    outside.unlink()
    lint = "\n".join(map_lint(folder).lines())
    assert f"library {outside}: gone, no longer applied" in lint
    assert StagedFile.objects.get(directory=str(folder), file_name="cortex.md").metadata_map["DEFAULT"] == {
        "title": "Cells in the Cortex"}
    assert "gone" not in "\n".join(map_lint(folder).lines())  # forgotten


def test_an_edit_of_the_staged_map_that_a_library_change_replaces_is_reported(domain, folder):
    run("chunk", str(folder))
    staged = StagedFile.objects.get(directory=str(folder), file_name="hippo.md")
    staged.metadata_map["DEFAULT"]["year"] = 2000  # the staged-file admin page
    staged.save()
    (folder / "refs.bib").write_text(BIB.replace("year = {2019}", "year = {2018}"), encoding="utf-8")
    lines = map_lint(folder).lines()
    assert ("  hippo.md: conflict: [DEFAULT] year: edit 2000 -> 2018 (the cascade or library changed; "
            "the change wins)") in lines
    assert StagedFile.objects.get(pk=staged.pk).metadata_map["DEFAULT"]["year"] == 2018


def test_map_lint_command_is_fatal_for_a_library_that_does_not_parse(domain, folder):
    run("chunk", str(folder))
    shutil.copy(DATA / "malformed" / "duplicate.bib", folder / "more.bib")
    with pytest.raises(CommandError, match=r"^a library does not parse \(see above\); nothing of it was applied$"):
        run("map-lint", str(folder))


def test_python_api_add_takes_a_library(domain, folder, tmp_path):
    from chat.rag import Knowledge

    outside = tmp_path / "elsewhere.bib"
    (folder / "refs.bib").rename(outside)
    Knowledge(store="api-lib", domain="library", create=True).add(folder, library=outside)
    assert Document.objects.get(store__name="api-lib", file_name="hippo.md").metadata["year"] == 2019
    shutil.copy(DATA / "malformed" / "latin1.bib", tmp_path / "bad.bib")
    with pytest.raises(LibraryError, match=r"^bad.bib: line 7: not UTF-8 \(byte 0xe9\)"):
        Knowledge(store="api-lib", domain="library").add(folder, library=tmp_path / "bad.bib")


def test_staged_map_edited_in_the_admin_is_stored_and_sources_are_read_only(domain, folder, admin_client):
    run("chunk", str(folder))
    staged = StagedFile.objects.get(directory=str(folder), file_name="other.md")
    url = f"/admin/ingestion/stagedfile/{staged.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert '<div class="form-row field-sources">' in page and 'name="sources"' not in page
    entries = {**staged.metadata_map, "DEFAULT": {"title": "Something else", "year": 1999}}
    response = admin_client.post(url, {"metadata_map": json.dumps(entries)})
    assert response.status_code == 302
    output = run("store", str(folder), "--collection", "lib-store", "--domain", "library")
    assert "  stored                 3\n" in output
    assert set(Chunk.objects.filter(document__file_name="other.md").values_list("year", flat=True)) == {1999}

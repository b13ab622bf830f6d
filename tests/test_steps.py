"""chunk and store as separate steps: staging, the metadata map (lookup order, person
names, edits, export/import, re-apply without re-embedding), incremental runs, lints."""

from __future__ import annotations

import json
import shutil
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command

from domains.models import Chunk, Document, Domain, FilterField, MetadataEntry
from ingestion.chunk.step import chunk_directory
from ingestion.metadata.map import MapError, lookup, lookup_keys, reapply
from ingestion.metadata.map_io import export_map, import_map
from ingestion.metadata.map_lint import map_lint, missing_fields, suspicious_doi
from ingestion.models import IngestionJob, StagedFile
from ingestion.outcomes import IngestError
from ingestion.store.lint import store_lint
from ingestion.store.step import store_directory
from tests.conftest import corpora_path

GUIDE = """# Guide

Intro text about neurons.

## Channels

Sodium channels open.

### Gating

Gates move.
"""


@pytest.fixture
def domain(db):
    domain = Domain.objects.create(name="steps", description="Step tests")
    FilterField.objects.create(domain=domain, name="authors", value_type="list", person_name=True)
    return domain


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "notes.txt").write_text("Plain notes.\n\nSecond paragraph.", encoding="utf-8")
    return root


def test_lookup_order_full_chain_suffixes_ancestors_then_default():
    assert lookup_keys(["A", "B", "C"]) == ["A > B > C", "B > C", "C", "A > B", "A"]
    entries = {"DEFAULT": {"title": "T", "year": 2020}, "A > B > C": {}, "B > C": {"year": 2021}, "A": {"year": 1999}}
    assert lookup(entries, ["A", "B", "C"]) == {"title": "T", "year": 2021}  # {} falls through to the suffix
    assert lookup(entries, ["A", "X"]) == {"title": "T", "year": 1999}  # an ancestor
    assert lookup(entries, ["Z"]) == {"title": "T", "year": 2020}
    assert lookup({}, ["A"]) == {}


def test_chunk_stages_without_touching_stored_chunks(domain, folder):
    report = chunk_directory(folder)
    assert {o.file_name: (o.status, o.chunks) for o in report.outcomes} == {
        "guide.md": ("chunked", 3), "notes.txt": ("chunked", 1)
    }
    staged = StagedFile.objects.get(directory=str(folder), file_name="guide.md")
    assert staged.chunks == [
        {"headings": ["Guide"], "text": "Intro text about neurons.", "tokens": staged.chunks[0]["tokens"],
         "provenance": {"lines": [3, 3], "offset": GUIDE.index("Intro"), "anchor": "guide"}},
        {"headings": ["Guide", "Channels"], "text": "Sodium channels open.", "tokens": staged.chunks[1]["tokens"],
         "provenance": {"lines": [7, 7], "offset": GUIDE.index("Sodium"), "anchor": "channels"}},
        {"headings": ["Guide", "Channels", "Gating"], "text": "Gates move.", "tokens": staged.chunks[2]["tokens"],
         "provenance": {"lines": [11, 11], "offset": GUIDE.index("Gates"), "anchor": "gating"}},
    ]
    assert staged.metadata_map == {
        "DEFAULT": {"title": "Guide"}, "Guide": {}, "Guide > Channels": {}, "Guide > Channels > Gating": {}
    }
    assert staged.options == {"max_tokens": 450, "ocr": "auto", "format": 8}
    assert not Document.objects.filter(source_path__startswith=str(folder)).exists()
    again = chunk_directory(folder)
    assert [o.status for o in again.outcomes] == ["unchanged", "unchanged"]
    rechunked = chunk_directory(folder, max_tokens=64)
    assert [o.status for o in rechunked.outcomes] == ["chunked", "chunked"]


def test_the_chunk_size_setting_is_the_default_budget(domain, folder, settings):
    """KLEA_CHUNK_MAX_TOKENS (docs/configuration.md) was documented but read by nothing."""
    settings.KLEA_CHUNK_MAX_TOKENS = 64
    chunk_directory(folder)
    staged = StagedFile.objects.get(directory=str(folder), file_name="guide.md")
    assert staged.options == {"max_tokens": 64, "ocr": "auto", "format": 8}
    call_command("stores", "chunk", str(folder), "--no-progress", stdout=StringIO(), stderr=StringIO())
    assert IngestionJob.objects.latest("pk").arguments["max_tokens"] == 64


def test_store_applies_the_edited_map_with_person_name_variants(domain, folder):
    chunk_directory(folder)
    staged = StagedFile.objects.get(directory=str(folder), file_name="guide.md")
    staged.metadata_map["DEFAULT"].update(authors=["Ankur Sinha"], year=2021)
    staged.metadata_map["Guide > Channels"] = {"year": 2023, "url_1": "https://example.org/channels"}
    staged.save()
    report = store_directory(folder, "steps-store", "steps")
    assert {o.file_name: o.status for o in report.outcomes} == {"guide.md": "stored", "notes.txt": "stored"}
    chunks = list(Chunk.objects.filter(document__file_name="guide.md").order_by("ordinal"))
    variants = ["Ankur Sinha", "ankur sinha", "Ankur", "Sinha", "ankur", "sinha"]
    base = {"title": "Guide", "authors": ["Ankur Sinha"], "_authors_variants": variants}
    assert [(c.metadata, c.year) for c in chunks] == [
        ({**base, "year": 2021}, 2021),
        ({**base, "year": 2023, "url_1": "https://example.org/channels"}, 2023),
        ({**base, "year": 2023, "url_1": "https://example.org/channels"}, 2023),  # the ancestor entry
    ]
    entries = dict(MetadataEntry.objects.filter(document__file_name="guide.md").values_list("heading_key", "values"))
    assert entries["Guide > Channels"] == {"year": 2023, "url_1": "https://example.org/channels"}
    assert Document.objects.get(file_name="guide.md").metadata == staged.metadata_map["DEFAULT"]


def test_store_without_chunk_fails_per_file_and_incremental_runs(domain, folder):
    report = store_directory(folder, "steps-store", "steps")
    assert [(o.file_name, o.status, o.reason) for o in report.outcomes] == [
        ("guide.md", "failed", "not_chunked"), ("notes.txt", "failed", "not_chunked")
    ]
    assert report.outcomes[0].error == (
        "guide.md: not chunked, or changed since `stores chunk`; run `manage.py stores chunk` first"
    )
    chunk_directory(folder)
    store_directory(folder, "steps-store", "steps")
    ids = set(Chunk.objects.filter(document__file_name="notes.txt").values_list("id", flat=True))
    (folder / "guide.md").write_text("# Guide\n\nRewritten.\n", encoding="utf-8")
    stale = store_directory(folder, "steps-store", "steps")
    assert {o.file_name: o.status for o in stale.outcomes} == {"guide.md": "failed", "notes.txt": "unchanged"}
    assert list(Chunk.objects.filter(document__file_name="guide.md").values_list("text", flat=True)) == [
        "Intro text about neurons.", "Sodium channels open.", "Gates move."
    ]  # the old version keeps serving until the new one is stored
    chunk_directory(folder)
    (folder / "notes.txt").unlink()
    chunk_directory(folder)
    fresh = store_directory(folder, "steps-store", "steps")
    assert {o.file_name: o.status for o in fresh.outcomes} == {"guide.md": "stored", "notes.txt": "pruned"}
    assert list(Chunk.objects.filter(document__file_name="guide.md").values_list("text", flat=True)) == ["Rewritten."]
    assert not Chunk.objects.filter(id__in=ids).exists()
    forced = store_directory(folder, "steps-store", "steps", force=True)
    assert [o.status for o in forced.outcomes] == ["stored"]


def test_a_file_chunked_again_with_other_options_is_stored_again(domain, folder):
    """Same content, new budget (or chunk format): the stored chunks are replaced without
    --force; the docs promise it, the store step used to call the file unchanged."""
    chunk_directory(folder)
    store_directory(folder, "steps-store", "steps")
    chunk_directory(folder, max_tokens=32)
    again = store_directory(folder, "steps-store", "steps")
    assert {o.file_name: o.status for o in again.outcomes} == {"guide.md": "stored", "notes.txt": "stored"}
    staged = StagedFile.objects.get(directory=str(folder), file_name="guide.md")
    store_id = str(Chunk.objects.filter(document__file_name="guide.md").first().store_id)
    assert staged.sources["stored_chunking"] == {store_id: {"max_tokens": 32, "ocr": "auto", "format": 8}}
    third = store_directory(folder, "steps-store", "steps")
    assert {o.file_name: o.status for o in third.outcomes} == {"guide.md": "unchanged", "notes.txt": "unchanged"}

    def forget_the_record():  # as for files stored before it was kept
        for row in StagedFile.objects.filter(directory=str(folder)):
            row.sources = {k: v for k, v in row.sources.items() if k != "stored_chunking"}
            row.save(update_fields=["sources"])

    forget_the_record()
    assert {o.status for o in store_directory(folder, "steps-store", "steps").outcomes} == {"unchanged"}
    chunk_directory(folder, max_tokens=64)
    forget_the_record()
    assert {o.status for o in store_directory(folder, "steps-store", "steps").outcomes} == {"stored"}


def test_bm25_store_has_no_embeddings_and_mode_conflicts_are_errors(domain, folder):
    chunk_directory(folder)
    store_directory(folder, "keyword-store", "steps", bm25_only=True)
    assert Chunk.objects.filter(store__name="keyword-store").count() == 4
    assert not Chunk.objects.filter(store__name="keyword-store", embedding__isnull=False).exists()
    store_directory(folder, "dense-store", "steps")
    with pytest.raises(IngestError, match="^store 'dense-store' has mode 'both'; --bm25-store needs a bm25 store$"):
        store_directory(folder, "dense-store", "steps", bm25_only=True)


def test_a_heading_less_chunk_is_searched_by_its_title_and_a_new_title_reaches_it(domain, folder):
    """notes.txt has no heading: its title (its first line, as ingestion sets it) is in its
    chunk's search text, after the text; a title edited in its map is too, at once."""
    chunk_directory(folder)
    store_directory(folder, "steps-store", "steps")
    chunk = Chunk.objects.get(document__file_name="notes.txt")
    assert (chunk.headings, chunk.document.metadata["title"]) == ([], "Plain notes.")
    assert str(chunk.search_vector) == "'note':2,6 'paragraph':4 'plain':1,5 'second':3"
    embedding = np.array(chunk.embedding)
    entry = MetadataEntry.objects.get(document=chunk.document, heading_key="DEFAULT")
    entry.values = {**entry.values, "title": "Field diary"}
    entry.save()
    reapply(entry.document)
    chunk.refresh_from_db()
    assert str(chunk.search_vector) == "'diari':6 'field':5 'note':2 'paragraph':4 'plain':1 'second':3"
    assert np.array_equal(np.array(chunk.embedding), embedding)  # nothing re-embedded
    guide = Chunk.objects.filter(document__file_name="guide.md").order_by("ordinal").first()
    assert "diari" not in str(guide.search_vector)


def test_map_export_import_round_trip_and_reapply_without_reembedding(domain, folder, tmp_path):
    chunk_directory(folder)
    store_directory(folder, "steps-store", "steps")
    exported = export_map(store_name="steps-store")
    assert exported["guide.md"]["DEFAULT"] == {"title": "Guide"}
    assert export_map(directory=folder) == {
        "guide.md": exported["guide.md"], "notes.txt": exported["notes.txt"]
    }
    before = {c.id: np.array(c.embedding) for c in Chunk.objects.filter(document__file_name="guide.md")}
    exported["guide.md"]["DEFAULT"]["year"] = 2019
    exported["guide.md"]["Guide > Channels > Gating"] = {"doi": "10.1000/xyz"}
    exported["missing.md"] = {"DEFAULT": {}}
    path = tmp_path / "metadata-map.json"
    path.write_text(json.dumps(exported), encoding="utf-8")
    result = import_map(path, store_name="steps-store")
    assert (result.updated, result.chunks, result.unknown) == (1, 3, ["missing.md"])
    after = {c.id: c for c in Chunk.objects.filter(document__file_name="guide.md")}
    assert set(after) == set(before)  # same rows: nothing was re-embedded
    assert all(np.array_equal(np.array(after[i].embedding), before[i]) for i in before)
    assert sorted((c.year, c.metadata.get("doi", "")) for c in after.values()) == [
        (2019, ""), (2019, ""), (2019, "10.1000/xyz")
    ]
    entry = MetadataEntry.objects.get(document__file_name="guide.md", heading_key="DEFAULT")
    entry.values = {"title": "Guide", "year": 2001}
    entry.save()
    assert reapply(entry.document) == 3
    assert set(Chunk.objects.filter(document__file_name="guide.md").values_list("year", flat=True)) == {2001}
    path.write_text('{"guide.md": {"Guide": {}}}', encoding="utf-8")
    with pytest.raises(MapError, match="^guide.md: no DEFAULT entry$"):
        import_map(path, store_name="steps-store")
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(MapError, match=r"not valid JSON \(line 1, column 2: "):
        import_map(path, directory=folder)


@pytest.mark.parametrize(
    "doi, problem",
    [("10.1016/0022-0000(85)90041-8", ""), ("10.1000/paper.pdf", "contains '.pdf'"), ("10.1000/abc.", "junk after the suffix"),
     ("doi:10.1000/x", "not of the form 10.NNNN/suffix"), ("10.1000/a(b", "unbalanced parentheses")],
)
def test_suspicious_dois(doi, problem):
    assert suspicious_doi(doi) == problem


def test_map_lint_reports_everything_and_is_fatal_for_files_without_entry(domain, folder):
    (folder / "smith2014_cells.md").write_text("# Cells\n\nText.\n", encoding="utf-8")
    chunk_directory(folder)
    staged = StagedFile.objects.get(directory=str(folder), file_name="smith2014_cells.md")
    staged.metadata_map["DEFAULT"] = {
        "title": "smith2014_cells", "year": 2013, "doi": "10.1000/x.pdf",
        **{f"url_{i}": f"https://example.org/{i}" for i in range(1, 7)},
    }
    staged.save()
    (folder / "late.md").write_text("# Late\n\nNot chunked yet.\n", encoding="utf-8")
    (folder / "metadata-map.json").write_text(json.dumps({"Guide > Channels": {"DEFAULT": {}}}), encoding="utf-8")
    report = map_lint(folder)
    assert report.fatal
    assert report.sections == {
        "map keys that are not source files": ["Guide > Channels: a heading chain, not a file name (stale map?)"],
        "source files without a map entry (fatal)": ["late.md: not chunked"],
        # a cited work (year, DOI) lacks its authors; plain notes lack no bibliographic field
        "missing core fields": ["smith2014_cells.md: authors"],
        "suspicious titles": ["guide.md: 'Guide'", "smith2014_cells.md: 'smith2014_cells'"],
        "suspicious DOIs": ["smith2014_cells.md [DEFAULT]: 10.1000/x.pdf (contains '.pdf')"],
        "suspicious years": ["smith2014_cells.md [DEFAULT]: year 2013 but the file name says 2014"],
        "too many url keys": ["smith2014_cells.md [DEFAULT]: 6 (at most 5)"],
    }


def test_store_lint_totals_findings_and_samples(domain, folder):
    (folder / "tiny.md").write_text("# T\n\nok\n", encoding="utf-8")
    chunk_directory(folder)
    store_directory(folder, "steps-store", "steps")
    report = store_lint("steps-store", samples=2)
    assert report.totals == [
        "chunks 5, files 3, characters 90",
        "chunks per file: min 1, max 3, mean 1.7",
    ]
    assert report.sections["near-empty chunks"] == ["guide.md #2: 'Gates move.'", "tiny.md #0: 'ok'"]
    assert "chunks missing metadata" not in report.sections  # plain notes: no year or DOI expected
    assert report.samples[0] == "window 1:"
    assert report.samples[1] == "  guide.md #0 [Guide] Intro text about neurons."
    assert len(report.samples) == 8  # two windows of three chunks
    with pytest.raises(IngestError, match="^store 'nope' does not exist$"):
        store_lint("nope")
    # a field the domain filters on is expected of every file
    FilterField.objects.create(domain=domain, name="year", value_type="int")
    assert store_lint("steps-store").sections["chunks missing metadata"] == [
        "guide.md: year (3 of 3 chunks)", "notes.txt: year (1 of 1 chunk)", "tiny.md: year (1 of 1 chunk)"]


def test_bibliographic_fields_are_expected_of_papers_and_cited_works_only():
    fields = ("title", "year", "doi")
    assert missing_fields("notes.md", {"title": "Notes"}, fields) == []
    assert missing_fields("notes.md", {}, fields) == ["title"]
    assert missing_fields("paper.PDF", {"title": "Spikes"}, fields) == ["year", "doi"]
    assert missing_fields("notes.md", {"title": "Spikes", "authors": ["A. Smith"]}, fields) == ["year", "doi"]
    assert missing_fields("notes.md", {"title": "Spikes"}, fields, frozenset({"doi"})) == ["doi"]


def test_chunk_fills_a_pdf_default_entry_from_the_bibliographic_cascade(db, tmp_path):
    """The Info-dict title of this PDF is junk ("ipg1300180a"): the cascade's layout and
    regex tiers supply the hand-checked values of ground_truth.json (network tier off)."""
    shutil.copy(corpora_path("pdfs", "sundstrom2014_intpsychogeriatr.pdf"), tmp_path)
    chunk_directory(tmp_path)
    default = StagedFile.objects.get(directory=str(tmp_path)).metadata_map["DEFAULT"]
    assert {key: default[key] for key in ("title", "authors", "year", "doi", "url_doi", "_sources")} == {
        "title": "Stressful life events are not associated with the development of dementia",
        "authors": ["Anna Sundström", "Michael Rönnlund", "Rolf Adolfsson", "Lars-Göran Nilsson"],
        "year": 2014,
        "doi": "10.1017/S1041610213001804",
        "url_doi": "https://doi.org/10.1017/S1041610213001804",
        "_sources": ["layout-regex", "regex"],
    }

"""Builds with a reference-manager library: one precedence rule for a file's map sources
(library, map file, admin edits), applied at store without re-embedding; the library
beside the files (folder, admin upload, --library, the Python API) and map-lint."""

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
from ingestion.metadata.library import LibraryError
from ingestion.metadata.map_lint import map_lint
from ingestion.models import IngestionJob, StagedFile

DATA = Path(__file__).parent / "data" / "libraries"


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

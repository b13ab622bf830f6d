"""Directory ingestion: incremental, pruning, bad files isolated, clear run errors."""

from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from domains.models import Chunk, Document, Domain, MetadataEntry, Store
from ingestion.models import IngestionJob
from ingestion.outcomes import IngestError
from ingestion.runs.ingest import ingest


@pytest.fixture
def domain(db):
    return Domain.objects.create(name="ingest-test", description="Ingestion tests")


def make_tree(root: Path) -> Path:
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "intro.md").write_text(
        "# Intro\n\nNeurons communicate through synapses.\n\n## Channels\n\nIon channels open.\n", encoding="utf-8"
    )
    (root / "api.rst").write_text("API\n===\n\nThe ``sel`` method selects by label.\n", encoding="utf-8")
    (root / "page.html").write_text("<h1>Page</h1><p>An HTML page about spikes.</p>", encoding="utf-8")
    (root / "notes.txt").write_text("Plain notes.\n\nSecond paragraph.", encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.md").write_text("# Hidden\n\nnever ingested", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG")  # unsupported extension: not listed at all
    return root


def test_ingest_builds_documents_chunks_and_metadata(domain, tmp_path):
    report = ingest(make_tree(tmp_path), "ingest-store", "ingest-test", mirror=True)
    assert (report.count("stored"), report.count("failed"), report.chunks) == (4, 0, 5)
    store = Store.objects.get(name="ingest-store")
    assert store.domain == domain
    docs = dict(Document.objects.filter(store=store).values_list("file_name", "status"))
    assert docs == {"api.rst": "stored", "guide/intro.md": "stored", "notes.txt": "stored", "page.html": "stored"}
    intro = Chunk.objects.filter(store__name="ingest-store", document__file_name="guide/intro.md").order_by("ordinal")
    assert [(c.headings, c.text) for c in intro] == [
        (["Intro"], "Neurons communicate through synapses."),
        (["Intro", "Channels"], "Ion channels open."),
    ]
    vectors = np.array([c.embedding for c in intro])
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert MetadataEntry.objects.get(document__store__name="ingest-store", document__file_name="api.rst", heading_key="DEFAULT").values == {"title": "API"}
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.done, job.total, job.errors) == ("succeeded", 4, 4, {})


def test_rerun_skips_unchanged_replaces_changed_and_prunes_removed(domain, tmp_path):
    root = make_tree(tmp_path)
    ingest(root, "ingest-store", "ingest-test", mirror=True)
    first_ids = set(Chunk.objects.filter(store__name="ingest-store", document__file_name="api.rst").values_list("id", flat=True))

    (root / "guide" / "intro.md").write_text("# Intro\n\nRewritten text.\n", encoding="utf-8")
    (root / "notes.txt").unlink()
    report = ingest(root, "ingest-store", "ingest-test", mirror=True)
    statuses = {o.file_name: o.status for o in report.outcomes}
    assert statuses == {
        "api.rst": "unchanged",
        "page.html": "unchanged",
        "guide/intro.md": "stored",
        "notes.txt": "pruned",
        "image.png": "unsupported",
    }
    assert list(Chunk.objects.filter(store__name="ingest-store", document__file_name="guide/intro.md").values_list("text", flat=True)) == [
        "Rewritten text."
    ]
    assert not Document.objects.filter(store__name="ingest-store", file_name="notes.txt").exists()
    assert set(Chunk.objects.filter(store__name="ingest-store", document__file_name="api.rst").values_list("id", flat=True)) == first_ids

    forced = ingest(root, "ingest-store", "ingest-test", mirror=True, force=True)
    assert forced.count("stored") == 3
    assert Chunk.objects.filter(store__name="ingest-store").count() == 3


def test_kleaignore_leaves_files_out_of_every_step_and_prunes_them_once_named(domain, tmp_path):
    root = make_tree(tmp_path)
    (root / "drafts").mkdir()
    (root / "drafts" / "plan.md").write_text("# Plan\n\nNot a source.\n", encoding="utf-8")
    (root / "guide" / "old.md").write_text("# Old\n\nOutdated page.\n", encoding="utf-8")
    (root / ".kleaignore").write_text("# not sources\ndrafts/\n*.png\n", encoding="utf-8")
    first = ingest(root, "ingest-store", "ingest-test", mirror=True)
    assert {o.file_name: o.status for o in first.outcomes} == {
        "api.rst": "stored", "guide/intro.md": "stored", "guide/old.md": "stored", "notes.txt": "stored",
        "page.html": "stored",
    }  # drafts/ and image.png (no longer "unsupported") are named by the ignore file

    (root / ".kleaignore").write_text("drafts/\n*.png\nguide/old.md\n", encoding="utf-8")
    second = ingest(root, "ingest-store", "ingest-test", mirror=True)
    assert {o.file_name: o.status for o in second.outcomes} == {
        "api.rst": "unchanged", "guide/intro.md": "unchanged", "guide/old.md": "pruned", "notes.txt": "unchanged",
        "page.html": "unchanged",
    }
    assert sorted(Document.objects.filter(store__name="ingest-store").values_list("file_name", flat=True)) == [
        "api.rst", "guide/intro.md", "notes.txt", "page.html",
    ]


def test_bad_files_fail_alone(domain, tmp_path):
    root = make_tree(tmp_path)
    (root / "binary.md").write_bytes(b"\x00\x01\x02 binary")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    report = ingest(root, "ingest-store", "ingest-test", mirror=True)
    failed = {o.file_name: o.error for o in report.outcomes if o.status == "failed"}
    assert failed == {
        "binary.md": "binary.md: binary content in a text file (NUL bytes)",
        "latin1.txt": "latin1.txt: not UTF-8 (byte 0xe9 at offset 3)",
    }
    assert report.count("stored") == 4
    bad = Document.objects.get(store__name="ingest-store", file_name="binary.md")
    assert (bad.status, bad.chunks.count()) == ("failed", 0)
    assert IngestionJob.objects.get(pk=report.job_id).status == "partial"


def test_run_errors_are_one_line_and_write_nothing(domain, tmp_path):
    with pytest.raises(IngestError, match=r"no_such: no such directory$"):
        ingest(tmp_path / "no_such", "s", "ingest-test", mirror=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match=r"empty: no files to ingest \(supported: "):
        ingest(tmp_path / "empty", "s", "ingest-test", mirror=True)
    root = make_tree(tmp_path / "tree")
    with pytest.raises(IngestError) as info:
        ingest(root, "s", "no-such-domain", mirror=True)
    assert str(info.value) == (
        "domain 'no-such-domain' does not exist; create it in the admin or with `manage.py loaddomains`"
    )
    other = Domain.objects.create(name="other-domain", description="o")
    Store.objects.create(name="taken", domain=other)
    with pytest.raises(IngestError, match="store 'taken' belongs to domain 'other-domain', not 'ingest-test'"):
        ingest(root, "taken", "ingest-test", mirror=True)
    assert not Store.objects.filter(name="s").exists()
    assert not Document.objects.filter(store__name="taken").exists()


def test_command_prints_summary_and_exits_nonzero_on_failures(domain, tmp_path):
    root = make_tree(tmp_path)
    out = StringIO()
    call_command("stores", "build", str(root), "--collection", "cmd-store", "--domain", "ingest-test",
                 "--no-progress", stdout=out, stderr=StringIO())
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("store cmd-store (job ")
    assert lines[1:6] == [
        "  stored                 4",
        "  unchanged              0",
        "  skipped                0",
        "  failed                 0",
        "  pruned                 0",
    ]
    # build = chunk + store: the map-lint of chunk, then the store-lint of store
    headers = [line for line in lines if line.startswith(("map-lint ", "store-lint "))]
    assert headers == [f"map-lint {root}", "store-lint cmd-store (domain ingest-test, mode both)"]
    (root / "bad.md").write_bytes(b"\x00")
    with pytest.raises(CommandError, match=r"^1 file\(s\) failed; the others were stored$"):
        call_command("stores", "build", str(root), "--collection", "cmd-store", "--domain", "ingest-test",
                     "--no-progress", stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="domain 'nope' does not exist"):
        call_command("stores", "build", str(root), "--collection", "x", "--domain", "nope", "--no-progress")


def test_a_file_that_vanishes_mid_run_fails_alone_and_the_job_is_closed(domain, tmp_path):
    for name in ("a.txt", "b.txt", "c.txt"):
        (tmp_path / name).write_text(f"File {name} about axons.", encoding="utf-8")

    def on_chunked(outcome):
        if outcome.file_name == "a.txt":
            (tmp_path / "b.txt").unlink()  # listed already, not yet chunked

    report = ingest(tmp_path, "vanish-store", "ingest-test", mirror=True, on_chunked=on_chunked)
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        ("a.txt", "stored", "", ""),
        ("c.txt", "stored", "", ""),
        ("b.txt", "failed", "missing", "b.txt: vanished during the run"),
    ]
    assert sorted(Document.objects.filter(store__name="vanish-store").values_list("file_name", flat=True)) == [
        "a.txt", "c.txt"
    ]
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.done, job.errors) == ("partial", 3, {"b.txt": "b.txt: vanished during the run"})

    # Listed by the store step, gone before it is stored.
    from ingestion.runs.steps import run_store

    report = run_store(tmp_path, "vanish-store", "ingest-test", on_start=lambda total: (tmp_path / "c.txt").unlink())
    assert [(o.file_name, o.status, o.error) for o in report.outcomes] == [
        ("a.txt", "unchanged", ""),
        ("c.txt", "failed", "c.txt: vanished during the run"),
    ]
    assert IngestionJob.objects.get(pk=report.job_id).status == "partial"


def test_an_unexpected_exception_still_closes_the_job(domain, tmp_path):
    (tmp_path / "a.txt").write_text("Some text.", encoding="utf-8")

    def on_chunked(outcome):
        raise RuntimeError("callback broke\nsecond line")

    with pytest.raises(RuntimeError):
        ingest(tmp_path, "boom-store", "ingest-test", mirror=True, on_chunked=on_chunked)
    job = IngestionJob.objects.get(kind="build", store__name="boom-store")
    assert (job.status, job.messages, job.finished_at is not None) == ("failed", ["RuntimeError: callback broke"], True)


def test_a_file_with_no_text_is_skipped_and_leaves_no_document(domain, tmp_path):
    (tmp_path / "good.md").write_text("# Good\n\nReal text.\n", encoding="utf-8")
    (tmp_path / "only.md").write_text("# Only\n\nIt had text once.\n", encoding="utf-8")
    ingest(tmp_path, "skip-store", "ingest-test", mirror=True)
    assert Chunk.objects.filter(document__file_name="only.md").count() == 1
    (tmp_path / "only.md").write_text("```{toctree}\na\n```\n", encoding="utf-8")  # now markup only
    report = ingest(tmp_path, "skip-store", "ingest-test", mirror=True)
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        ("good.md", "unchanged", "", ""),
        ("only.md", "skipped", "no_text", "only.md: no text left after conversion (only markup)"),
    ]
    assert list(Document.objects.filter(store__name="skip-store").values_list("file_name", "status")) == [
        ("good.md", "stored")
    ]
    assert not Chunk.objects.filter(document__file_name="only.md").exists()
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.outcomes) == ("succeeded", {"good.md": "unchanged", "only.md": "skipped"})
    again = ingest(tmp_path, "skip-store", "ingest-test", mirror=True)
    assert [(o.file_name, o.status) for o in again.outcomes] == [("good.md", "unchanged"), ("only.md", "skipped")]


def test_kleaignore_wildcards_match_as_pathspec_does_without_backtracking(tmp_path):
    # Each "*" of pathspec's own regex tried every split of a name between them: this
    # pattern took about 290 s on the 60-letter name; the matches are unchanged.
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    from ingestion.sources import _IgnorePattern, list_source_files

    (tmp_path / ".kleaignore").write_text("a*a*a*a*a*a*a*a*a.txt\n", encoding="utf-8")
    for name in ("a" * 60 + ".md", "a" * 12 + ".txt", "ab.txt"):
        (tmp_path / name).write_text("x", encoding="utf-8")
    assert [p.name for p in list_source_files(tmp_path)] == ["a" * 60 + ".md", "ab.txt"]
    patterns = ["*.draft.md", "a*b*c", "a\\*b*c*d", "x[*]y*z*", "[!a]*b*", "**/d*e*f/**", "g**h*i"]
    paths = ["a.draft.md", "x/abc", "a*bcd", "a*xbycd", "x*yzz", "xqyz", "babb", "abb", "k/def/g", "dxexf",
             "ghi", "gxhyi", "g/hi"]
    for text in patterns:
        ours, theirs = _IgnorePattern(text), GitIgnoreSpecPattern(text)
        assert [ours.match_file(p) is not None for p in paths] == [theirs.match_file(p) is not None for p in paths]


@pytest.mark.parametrize("content, error", [
    ("drafts/\nnotes\\\n", "line 2: not a gitignore pattern ('notes\\\\': Invalid git pattern: 'notes\\\\')"),
    ("**/a/**/b.md\n", "line 1: '**/a/**/b.md' has over 1 '**' parts (a pattern without '/' counts one)"),
    ("*/**/b.md\n", None),
    ("".join(f"f{i}.md\n" for i in range(1001)), ": 1,001 patterns, over the 1,000 a .kleaignore may hold"),
    ("# comment\n" * 7000, ": 70,000 bytes, over the 65,536 a .kleaignore may hold"),
])
def test_a_bad_kleaignore_fails_the_run_and_prunes_nothing(domain, tmp_path, content, error):
    root = make_tree(tmp_path / "docs")
    ingest(root, "ingest-store", "ingest-test", mirror=True)
    (root / ".kleaignore").write_text(content, encoding="utf-8")
    if error is None:  # one '**' (besides the implicit one) is fine
        assert ingest(root, "ingest-store", "ingest-test", mirror=True).count("unchanged") == 4
        return
    with pytest.raises(IngestError) as caught:
        ingest(root, "ingest-store", "ingest-test", mirror=True)
    assert str(caught.value) == f"{root / '.kleaignore'}{'' if error.startswith(':') else ', '}{error}"
    assert Document.objects.filter(store__name="ingest-store").count() == 4


def test_a_kleaignore_linked_out_of_the_folder_is_not_read(domain, tmp_path):
    root = make_tree(tmp_path / "docs")
    (tmp_path / "elsewhere").write_text("*.md\n", encoding="utf-8")
    (root / ".kleaignore").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(IngestError) as caught:
        ingest(root, "ingest-store", "ingest-test", mirror=True)
    assert str(caught.value) == f"{root / '.kleaignore'}: symbolic link to a path outside the folder; not followed"


def test_a_heading_too_long_for_a_title_is_cut_in_the_stored_metadata(domain, tmp_path):
    """A Markdown file's first heading is its title; one of 100,000 characters was stored
    whole in the metadata (shown in every reference to the file); cut at a word to 500."""
    from ingestion.metadata.defaults import TITLE_MAX_CHARS

    (tmp_path / "long.md").write_text("# " + "word " * 20_000 + "\n\nBody text.\n", encoding="utf-8")
    report = ingest(tmp_path, "title-store", "ingest-test")
    assert (report.count("stored"), report.count("failed")) == (1, 0)
    title = ("word " * 100)[:499] + "…"
    document = Document.objects.get(store__name="title-store", file_name="long.md")
    assert TITLE_MAX_CHARS == 500 and len(title) == 500
    assert document.metadata["title"] == title
    assert MetadataEntry.objects.get(document=document, heading_key="DEFAULT").values["title"] == title

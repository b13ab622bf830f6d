"""serialize_reference_material: the exact layout of docs/pipeline.md, "Reference material"."""

from domains.retrieval import serialize_reference_material
from domains.retrieval.types import RetrievedChunk

PAPER = {
    "title": "Cortical neurons",
    "authors": ["Ankur Sinha", "Padraig Gleeson"],
    "year": 2021,
    "doi": "10.1/x",
    "url_doi": "https://doi.org/10.1/x",
    "_authors_variants": ["Sinha"],
    "_metadata_complete": True,
}


def chunk(cid, doc, file_name, score, text, headings=(), metadata=None, domain="papers"):
    return RetrievedChunk(
        cid, text, list(headings), dict(metadata or {}), file_name, doc, "store", domain, score=score,
        source_scores={"store:bm25": 3.2},
    )


def test_layout_grouped_by_file_and_domain():
    results = [
        chunk(1, 10, "paper.pdf", 0.9, "Neurons spike.", ["Results", "2.1 Neurons"], {**PAPER, "section_url": "https://x/2.1"}),
        chunk(2, 20, "notes.md", 0.8, "A note.", [], {"title": "Notes"}),
        chunk(3, 10, "paper.pdf", 0.7, "Synapses adapt.", ["Discussion"], {**PAPER, "section_url": "https://x/4"}),
        chunk(4, 30, "guide.md", 0.95, "Install with pip.", ["Install"], {"title": "Guide", "_x": 1}, domain="docs"),
    ]
    material = serialize_reference_material(results)
    assert material.text == "\n".join(
        [
            "## docs",
            "",
            "### Source document 1/3: [guide.md]",
            "Metadata: title=Guide",
            "",
            "  Chunk 1: Install",
            "Install with pip.",
            "",
            "## papers",
            "",
            "### Source document 2/3: [paper.pdf]",
            "Metadata: title=Cortical neurons | authors=Ankur Sinha, Padraig Gleeson | year=2021 | doi=10.1/x"
            " | url_doi=https://doi.org/10.1/x",
            "",
            "  Chunk 1: Results > 2.1 Neurons",
            "  Chunk metadata: section_url=https://x/2.1",
            "Neurons spike.",
            "",
            "  Chunk 2: Discussion",
            "  Chunk metadata: section_url=https://x/4",
            "Synapses adapt.",
            "",
            "### Source document 3/3: [notes.md]",
            "Metadata: title=Notes",
            "",
            "  Chunk 1",
            "A note.",
        ]
    )
    assert [(s.number, s.file_name, [c.chunk_id for c in s.chunks]) for s in material.sources] == [
        (1, "guide.md", [4]),
        (2, "paper.pdf", [1, 3]),
        (3, "notes.md", [2]),
    ]
    assert material.source_of(3).number == 2 and material.source_of(99) is None
    assert "3.2" not in material.text and "_metadata_complete" not in material.text


def test_url_keys_equal_on_every_chunk_go_to_the_header():
    results = [
        chunk(1, 1, "a.md", 0.9, "One.", [], {"url": "https://a", "journal": "J"}),
        chunk(2, 1, "a.md", 0.8, "Two.", [], {"url": "https://a", "journal": "K"}),
    ]
    assert serialize_reference_material(results).text == "\n".join(
        [
            "## papers",
            "",
            "### Source document 1/1: [a.md]",
            "Metadata: url=https://a",
            "",
            "  Chunk 1",
            "  Chunk metadata: journal=J",
            "One.",
            "",
            "  Chunk 2",
            "  Chunk metadata: journal=K",
            "Two.",
        ]
    )


def test_no_results_no_text():
    material = serialize_reference_material([])
    assert (material.text, material.sources) == ("", [])

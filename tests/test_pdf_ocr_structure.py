"""Structure of OCRed pages (sizes estimated from word heights): paragraphs broken by a
column or page break, and large OCR noise that is no heading (ingestion/convert/pdf_layout.py,
pdf_structure.py)."""

from __future__ import annotations

from ingestion.convert.pdf_layout import Paragraph, merge_continued
from ingestion.convert.pdf_lines import Line
from ingestion.convert.pdf_structure import structure

HEIGHT = 792.0


def _ocr(page: int, top: float, text: str, size: float = 10.0, x0: float = 72.0, x1: float = 300.0) -> Line:
    """An OCR line whose top is ``top`` points below the page's top edge."""
    y1 = HEIGHT - top
    return Line(page, x0, y1 - size, x1, y1, size=size, bold=False, text=text, estimated=True, ocr=True)


def _body(page: int, top: float, count: int) -> list[Line]:
    return [_ocr(page, top + 12 * i, f"Body line {i} of page {page} goes on about the model and") for i in range(count)]


def test_ocr_paragraphs_split_by_a_page_break_rejoin_within_a_quarter_of_their_estimated_size():
    first = Paragraph([_ocr(0, 600, "that on models for distributed comput-", size=10.5)])
    tail = Paragraph([_ocr(1, 120, "ing. The next paragraph follows.", size=9.5)])
    other = Paragraph([_ocr(1, 140, "and so the sentence goes on", size=9.5)])
    unknown = Paragraph([_ocr(1, 160, "tion", size=1.0)])
    merged = merge_continued([first, tail])
    assert [p.text for p in merged] == ["that on models for distributed computing. The next paragraph follows."]
    assert [p.text for p in merge_continued([Paragraph([_ocr(0, 600, "the sentence", size=10.0)]), other])] == [
        "the sentence and so the sentence goes on"]
    assert [p.text for p in merge_continued([Paragraph([_ocr(0, 600, "Resource Alloca-", size=12.5)]), unknown])] == [
        "Resource Allocation"]


def test_a_hyphenated_word_rejoins_whatever_the_estimate_of_its_short_tail():
    first = Paragraph([_ocr(0, 600, "in order to produce a contradic-", size=9.5)])
    tail = Paragraph([_ocr(0, 612, "tion).", size=14.0)])
    assert [p.text for p in merge_continued([first, tail])] == ["in order to produce a contradiction)."]
    # Without a hyphen, sizes a third apart are two paragraphs (a caption under a figure).
    apart = [Paragraph([_ocr(0, 600, "a label", size=9.5)]), Paragraph([_ocr(0, 612, "under it", size=14.0)])]
    assert [p.text for p in merge_continued(apart)] == ["a label", "under it"]


def test_text_layer_paragraphs_keep_the_exact_size_rule():
    def line(top: float, text: str, size: float) -> Line:
        return Line(0, 72, HEIGHT - top - size, 300, HEIGHT - top, size=size, bold=False, text=text)

    pair = [Paragraph([line(600, "distributed comput-", 10.0)]), Paragraph([line(620, "ing.", 9.0)])]
    assert [p.text for p in merge_continued(pair)] == ["distributed comput-", "ing."]


def test_large_ocr_noise_is_no_heading_and_real_ocr_headings_stay():
    page = [
        _ocr(0, 40, "Probabilistic Counting Algorithms", size=20.0),
        _ocr(0, 80, "2. A PROBABILISTIC COUNTING PROCEDURE", size=14.0),
        *_body(0, 110, 4),
        _ocr(0, 200, "aft", size=16.0, x1=120),
        *_body(0, 230, 4),
        _ocr(0, 320, "Bes UL", size=16.0, x1=120),
        *_body(0, 350, 4),
        _ocr(0, 440, "1 1 r fini X", size=16.0, x1=150),
        *_body(0, 470, 4),
        _ocr(0, 560, "REFERENCES", size=14.0, x1=150),
        *_body(0, 590, 4),
    ]
    title, blocks = structure([page], [HEIGHT], [612.0])
    assert title == "Probabilistic Counting Algorithms"
    assert [(b.headings, b.text[:24]) for b in blocks] == [
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "Body line 0 of page 0 go"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "aft"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "Body line 0 of page 0 go"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "Bes UL"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "Body line 0 of page 0 go"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "1 1 r fini X"),
        (("2. A PROBABILISTIC COUNTING PROCEDURE",), "Body line 0 of page 0 go"),
        (("REFERENCES",), "Body line 0 of page 0 go"),
    ]


def test_a_document_of_one_line_paragraphs_that_all_rejoin_is_merged_in_linear_time():
    """50,000 OCR lines, each its own paragraph, each a word cut at its end: one paragraph,
    every word re-joined (re-reading the growing paragraph's lines at each step and
    re-building its text at each line were quadratic: 40 s at 20,000; bench/abuse.py)."""
    cut = [Paragraph([_ocr(i // 50, 100 + 12 * (i % 50), "the comput-" if i % 2 == 0 else "ing and",
                           size=9.0 + i % 3)]) for i in range(50_000)]
    merged = merge_continued(cut)
    assert len(merged) == 1
    assert len(merged[0].lines) == 50_000
    assert merged[0].text == " ".join(["the computing and"] * 25_000)

"""``manage.py evaluate`` and chat.scoring: word normalisation, coverage, percentiles,
question-file errors, scoring a turn, and the command end to end on a tiny domain."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chat.pipeline import Answer, Done, References, TurnResult
from chat.scoring import (
    Question,
    QuestionFileError,
    coverage,
    load_questions,
    parse_questions,
    percentile,
    score_turn,
    summarise,
    words,
)
from chat.scoring.metrics import strip_citations
from domains.models import Domain

from .pipeline_data import ARRAYS, ARRAYS_DESCRIPTION, NEURO, NEURO_DESCRIPTION, make_domain


def test_words_are_casefolded_runs_of_letters_and_digits():
    assert words("Use `keep_attrs=True`, **NaN**-skipping; ÜBER 2.5 ﬁle") == [
        "use", "keep", "attrs", "true", "nan", "skipping", "über", "2", "5", "file"]
    assert words("| --- | `` |") == []


def test_link_targets_and_role_names_are_not_words():
    # Evidence is copied from the source's markup; answers show the rendered text.
    assert words("saved and {ref}`recorded <userdocs:quantities>` in SI Units") == [
        "saved", "and", "recorded", "in", "si", "units"]
    assert words("`numpy <https://www.numpy.org/>`__ (1.26 or later)") == ["numpy", "1", "26", "or", "later"]
    assert words("[endorsed by the INCF](https://www.incf.org/sbp), :py:func:`~xarray.open_dataset`") == [
        "endorsed", "by", "the", "incf", "xarray", "open", "dataset"]
    assert words("a < b > c, see <http://x.org>") == ["a", "b", "c", "see"]


def test_citation_markers_are_removed_before_scoring():
    assert strip_citations("one [1] two [2, 3] three [4-5] four [x] [12]") == "one   two   three   four [x]  "


def test_coverage_is_the_share_of_distinct_evidence_words_found():
    assert coverage("open_mfdataset opens files", "It opens many files [1]") == 0.5
    assert coverage("The the THE cat", "a cat and the dog") == 1.0
    assert coverage("1678 and 2262", "between 1678 and 2000") == 2 / 3
    assert coverage("...", "anything") == 0.0


def test_nearest_rank_percentile():
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile([5, 1, 3, 2, 4], 95) == 5
    assert percentile([10.0, 20.0], 50) == 10.0
    assert percentile([7], 95) == 7
    assert percentile([], 50) is None


GOOD = {"question": "How?", "domain": "arrays", "file": "a.md", "evidence": "like this"}
OFF = {"question": "Who won?", "domain": None, "file": None, "evidence": None}


def test_question_files_parse_and_every_problem_is_listed():
    questions = parse_questions([GOOD, OFF], "q.json")
    assert questions == [
        Question("How?", "arrays", "a.md", "like this", "q.json", 1),
        Question("Who won?", None, None, None, "q.json", 2),
    ]
    assert [q.off_topic for q in questions] == [False, True]
    bad = [
        GOOD,
        "text",
        {"question": "x", "domain": "arrays", "file": "a.md"},
        {**GOOD, "evidense": "typo"},
        {**GOOD, "question": "  ", "file": "", "evidence": "--"},
        {**OFF, "file": "a.md"},
        {**GOOD, "domain": 3},
    ]
    with pytest.raises(QuestionFileError) as caught:
        parse_questions(bad, "q.json")
    assert str(caught.value).splitlines() == [
        "q.json: question 2: expected an object with keys question, domain, file, evidence, got str",
        "q.json: question 3: missing key(s) evidence",
        "q.json: question 4: unknown key(s) evidense (allowed: question, domain, file, evidence)",
        "q.json: question 5: 'question' must be a non-empty string",
        "q.json: question 5: 'file' must be the answering file's name in the domain's stores",
        "q.json: question 5: 'evidence' must be a passage of the file with at least one word",
        "q.json: question 6: an off-topic question (domain null) must have file and evidence null",
        "q.json: question 7: 'domain' must be a domain name or null (off-topic)",
    ]
    for data in ([], {"questions": [GOOD]}):
        with pytest.raises(QuestionFileError, match=r"^q.json: expected a non-empty JSON array of question objects$"):
            parse_questions(data, "q.json")


def test_unreadable_question_files(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(QuestionFileError, match=f"^{missing}: no such file$"):
        load_questions(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"question": "x",\n  "domain": }]', encoding="utf-8")
    with pytest.raises(QuestionFileError) as caught:
        load_questions(broken)
    assert str(caught.value) == f"{broken}: not valid JSON: Expecting value at line 2, column 13"
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'["caf\xe9"]')
    with pytest.raises(QuestionFileError, match=f"^{latin}: cannot be read as UTF-8 text"):
        load_questions(latin)


def test_hostile_question_files_are_refused_whole(tmp_path, settings):
    """Nesting too deep for the JSON parser was an uncaught RecursionError; a NUL, a lone
    surrogate or an over-long question reached the pipeline, which the chat refuses."""
    settings.KLEA_MAX_QUESTION_CHARS = 50
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(QuestionFileError) as caught:
        load_questions(deep)
    assert str(caught.value) == f"{deep}: not valid JSON: nested too deeply"
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps([
        {"question": "a\u0000b?", "domain": None, "file": None, "evidence": None},
        {"question": "\ud800?", "domain": None, "file": None, "evidence": None},
        {"question": " " + "x" * 51 + " ", "domain": None, "file": None, "evidence": None},
        {"question": "x" * 50, "domain": None, "file": None, "evidence": None},
    ]), encoding="utf-8")
    with pytest.raises(QuestionFileError) as caught:
        load_questions(hostile)
    assert str(caught.value).splitlines() == [
        f"{hostile}: question 1: 'question' contains a NUL character or a lone surrogate",
        f"{hostile}: question 2: 'question' contains a NUL character or a lone surrogate",
        f"{hostile}: question 3: 'question' has 51 characters; the limit is 50 (KLEA_MAX_QUESTION_CHARS)",
    ]


def _reference(number, domain, file_name, *texts):
    return {"number": number, "kind": "document", "domain": domain, "file_name": file_name,
            "chunks": [{"chunk_id": number, "headings": [], "heading_chain": "", "text": t} for t in texts]}


def test_a_turn_is_scored_against_its_question():
    question = Question("Which function opens many files?", "arrays", "netcdf.md",
                        "The function open_mfdataset opens many netCDF files as one dataset.")
    result = TurnResult([
        References([
            _reference(1, "arrays", "resample.md", "Use resample."),
            _reference(2, "arrays", "netcdf.md", "The function open_mfdataset opens many", "netCDF files as one dataset."),
            _reference(3, "other", "netcdf.md", "Unrelated."),
        ]),
        Answer("The function open_mfdataset opens many netCDF files [2].", "domains", ["arrays"], [2]),
        Done("complete", total_ms=80.0, ttft_ms=12.5),
    ])
    scored = score_turn(question, result)
    # evidence words: the function open mfdataset opens many netcdf files as one dataset (11);
    # the answer lacks "as", "one" and "dataset".
    assert (scored.answer_coverage, scored.references_coverage) == (0.7273, 1.0)
    assert scored.cited_files == ["resample.md", "netcdf.md"]
    assert (scored.routed_right, scored.file_cited, scored.evidence_in_answer, scored.evidence_in_references) == (
        True, True, False, True)
    assert scored.outcome() == "missed evidence_in_answer"
    assert (scored.ttft_ms, scored.total_ms, scored.status, scored.error) == (12.5, 80.0, "complete", "")

    off = score_turn(Question("Who won?", None, None, None), TurnResult([
        Answer("This question does not match any of the available domains (arrays). "
               "Tick a domain to ask it directly.", "refused"),
        Done("complete", total_ms=30.0, ttft_ms=None),
    ]))
    assert (off.refused, off.answer_coverage, off.outcome()) == (True, None, "refused")
    # Routed, then the sources were found not to answer: the answer cites nothing.
    declined = score_turn(Question("Who won?", None, None, None), TurnResult([
        Answer("No source in arrays answers this question.", "domains", ["arrays"], []),
        Done("complete", total_ms=30.0, ttft_ms=5.0),
    ]))
    quoted = score_turn(Question("Who won?", None, None, None), TurnResult([
        Answer("The winner is named in the table [1].", "domains", ["arrays"], [1]),
        Done("complete", total_ms=30.0, ttft_ms=5.0),
    ]))
    assert [(s.refused, s.citations, s.outcome()) for s in (declined, quoted)] == [
        (True, [], "refused"), (False, [1], "answered (domains: arrays)")]
    summary = summarise([off])
    assert (summary.questions, summary.refused, summary.rates, summary.median_answer_chars, summary.ttft_p50_ms) == (
        1, 1, {"refused": 1.0}, None, None)
    summary = summarise([scored, scored])
    assert summary.rates == {"routed_right": 1.0, "evidence_in_answer": 0.0, "file_cited": 1.0,
                             "evidence_in_references": 1.0}
    assert (summary.median_answer_chars, summary.ttft_p50_ms, summary.ttft_p95_ms) == (56, 12.5, 12.5)


@pytest.fixture
def tiny(db):
    return [make_domain("arrays", ARRAYS_DESCRIPTION, ARRAYS), make_domain("neuro", NEURO_DESCRIPTION, NEURO)]


def _write(tmp_path, items, name="questions.json"):
    path = tmp_path / name
    path.write_text(json.dumps(items), encoding="utf-8")
    return str(path)


TINY_QUESTIONS = [
    {"question": "How do I compute monthly means of a time series?", "domain": "arrays", "file": "resample.md",
     "evidence": "Use resample with a frequency such as ME to compute monthly means of a time series."},
    {"question": "Which function opens many netCDF files as one dataset?", "domain": "arrays", "file": "netcdf.md",
     "evidence": "The function open_mfdataset opens many netCDF files as one dataset."},
    {"question": "Which model reproduces spiking and bursting of cortical neurons?", "domain": "neuro",
     "file": "izhikevich.md", "evidence": "The Izhikevich model reproduces spiking and bursting behaviour"},
    # A wrong key on purpose: the scorer must count the misses.
    {"question": "Which model reproduces spiking and bursting of cortical neurons?", "domain": "neuro",
     "file": "stdp.md", "evidence": "Spike-timing dependent plasticity changes synaptic weights"},
    {"question": "Who won the football world cup in 2014?", "domain": None, "file": None, "evidence": None},
]


def test_evaluate_command_end_to_end(tiny, tmp_path, settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    path = _write(tmp_path, TINY_QUESTIONS)
    out, err = StringIO(), StringIO()
    call_command("evaluate", path, "--json", stdout=out, stderr=err)
    report = json.loads(out.getvalue())
    rows = [(q["domain"], q["route"], q["routed"], q["cited_files"], q["answer_coverage"], q["outcome"])
            for q in report["questions"]]
    assert rows == [
        ("arrays", "domains", ["arrays"], ["resample.md"], 1.0, "ok"),
        ("arrays", "domains", ["arrays"], ["netcdf.md"], 1.0, "ok"),
        ("neuro", "domains", ["neuro"], ["izhikevich.md"], 1.0, "ok"),
        ("neuro", "domains", ["neuro"], ["izhikevich.md"], 0.0,
         "missed evidence_in_answer, file_cited, evidence_in_references"),
        (None, "refused", [], [], None, "refused"),
    ]
    assert report["questions"][1]["answer"] == (
        "The function open_mfdataset opens many netCDF files as one dataset. "
        "It combines the files along their coordinates. [1]")
    counts = ("questions", "failed", "routed_right", "evidence_in_answer", "file_cited", "evidence_in_references",
              "refused", "median_answer_chars")
    assert {name: [s[c] for c in counts] for name, s in report["domains"].items()} == {
        "arrays": [2, 0, 2, 2, 2, 2, 0, 121.5], "neuro": [2, 0, 2, 1, 1, 1, 0, 171.0]}  # "It is as cheap ..." goes on
    assert [report["overall"][c] for c in counts] == [4, 0, 4, 3, 3, 3, 0, 148.0]
    assert report["overall"]["rates"] == {"routed_right": 1.0, "evidence_in_answer": 0.75, "file_cited": 0.75,
                                          "evidence_in_references": 0.75}
    assert (report["off_topic"]["questions"], report["off_topic"]["refused"], report["off_topic"]["rates"]) == (
        1, 1, {"refused": 1.0})
    assert all(q["ttft_ms"] > 0 for q in report["questions"])

    out = StringIO()
    call_command("evaluate", path, "--domain", "neuro", stdout=out, stderr=err)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("group           n         routed   evid. answer     file cited     evid. refs "
                        "median chars  ttft p50/p95 ms")
    assert lines[1].rsplit(maxsplit=1)[0] == (
        "neuro           2     2/2 (100%)      1/2 (50%)      1/2 (50%)      1/2 (50%)          171")
    assert len(lines) == 2


def test_evaluate_command_errors(tiny, tmp_path):
    good = _write(tmp_path, TINY_QUESTIONS)
    bad = _write(tmp_path, [{"question": "", "domain": "arrays", "file": "x.md", "evidence": "y"}], "bad.json")
    with pytest.raises(CommandError) as caught:
        call_command("evaluate", good, bad, str(tmp_path / "none.json"))
    assert str(caught.value).splitlines() == [
        "bad question file(s):",
        f"{bad}: question 1: 'question' must be a non-empty string",
        f"{tmp_path / 'none.json'}: no such file",
    ]
    with pytest.raises(CommandError, match=r"^no question of domain\(s\) cooking in "):
        call_command("evaluate", good, "--domain", "cooking")
    unknown = _write(tmp_path, [
        {"question": "q?", "domain": "cooking", "file": "a.md", "evidence": "e"},
        {"question": "q?", "domain": "arrays", "file": "missing.md", "evidence": "e"},
        {"question": "q?", "domain": "arrays", "file": "netcdf.md", "evidence": "e"},
    ], "unknown.json")
    with pytest.raises(CommandError) as caught:
        call_command("evaluate", unknown)
    # the session may hold committed domains of other tests (doc_domains): all are listed
    active = ", ".join(sorted(Domain.objects.filter(active=True).values_list("name", flat=True)))
    assert str(caught.value).splitlines() == [
        "questions that cannot be scored here:",
        f"{unknown}: question 1: domain 'cooking' does not exist or is inactive (active: {active})",
        f"{unknown}: question 2: file 'missing.md' is not a document of domain 'arrays'",
    ]

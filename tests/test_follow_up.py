"""Follow-up questions on the model-free path: "Can you give an example of it?" is routed
and searched together with the question before it (chat/pipeline/follow_up.py), in a
session and in a caller's own history; a question that names its subject, or whose
pronoun stands for something it names itself, is searched as asked."""

from __future__ import annotations

import pytest

from chat.models import ChatSession
from chat.pipeline.follow_up import is_follow_up, search_question

from .pipeline_helpers import domain_of, run, trace

NETCDF = "How do I open a netCDF file with Orbitals?"
EXAMPLE = "Can you give an example of it?"


@pytest.mark.parametrize(("question", "follow_up"), [
    ("Can you give an example of it?", True),
    ("How long does it last?", True),
    ("Which Python version does it require?", True),
    ("And what about Paxos?", True),
    ("What are its dependencies?", True),
    ("and which one handles client requests?", True),
    ("Which of the other ones sends heartbeats to followers?", True),
    ("What is one way to cook rice without a rice cooker?", False),
    ("Is it true that Orbitals reads netCDF files from remote servers?", False),
    ("How do I open a netCDF file with Orbitals?", False),
    ("What is a term in Raft?", False),
    # The first reference has no antecedent in the question.
    ("What is its default?", True),
    ("Which Java versions is it tested with?", True),  # the name asks which, "it" is the subject before
    ("What does open_dataset do with it?", True),  # "it" cannot be its own clause's subject
    ("Does it keep its data in PostgreSQL?", True),  # "its" is "it"
    ("Thanks! What is its default?", True),
    ("OK, thanks. Can I run it on several machines?", True),  # thanks name nothing, nor count as its own
    # An earlier clause or sentence names what the reference stands for.
    ("What does KLEA_MAX_TURNS_PER_USER do and what is its default?", False),
    ("What is xarray and why should I use it?", False),
    ("What is the turn limit, and can I change it?", False),
    ("I set KLEA_RAG_HISTORY_CHARS. How do I check it?", False),
    ("What is Klea? How do I upgrade it?", False),
    ("Of Raft and Paxos, which one is simpler?", False),
    ("My phone is slow, how do I fix it?", False),
    # A possessive may stand for a name before it in its own clause.
    ("How does Raft elect its leader?", False),
    ("Does `klea ask` print its sources?", False),
    ("Does it print its sources?", True),
    # "there" in "is there" names no place; "it" before what it stands for, or the weather, no thing.
    ("Is there a limit on turns?", False),
    ("Where is it stored there?", True),
    ("Is it possible to upload a PDF?", False),
    ("Does it hurt to get a tattoo?", False),
    ("Is it worth learning Latin?", False),
    ("Is it going to snow this weekend?", False),  # nor is "this weekend" said before
    ("Is it possible to run it on Windows?", True),  # the second "it" refers back
    ("Is it worth it?", True),
    ("Is it easy to use?", True),  # "it" is what "use" lacks
    ("Is it hard to install on Windows?", True),
])
def test_a_follow_up_refers_back_and_names_little_of_its_own(question, follow_up):
    assert is_follow_up(question) is follow_up


def test_a_follow_up_is_searched_with_the_questions_before_it():
    history = [
        {"role": "user", "content": "What is a term in Raft?"},
        {"role": "assistant", "content": "Raft divides time into terms of arbitrary length."},
        {"role": "user", "content": "How long does it last?"},
        {"role": "assistant", "content": "Terms are numbered with consecutive integers."},
    ]
    assert search_question("And what about Paxos?", history) == (
        "What is a term in Raft? How long does it last? And what about Paxos?")
    assert search_question("How long does it last?", history[:2]) == "What is a term in Raft? How long does it last?"
    assert search_question("What is a log entry in Raft?", history) == "What is a log entry in Raft?"
    # Its pronoun stands for a name of its own: searched as asked, after a follow-up or not.
    assert search_question("What does Raft do and what is its term?", history) == (
        "What does Raft do and what is its term?")
    assert search_question("What is its term?", [{"role": "user", "content": "What does Raft do?"}]) == (
        "What does Raft do? What is its term?")
    assert search_question("How long does it last?", []) == "How long does it last?"
    # A caller's history may end with the question itself (the OpenAI messages list).
    assert search_question("How long does it last?", history[:2] + [
        {"role": "user", "content": "How long does it last?"}]) == "What is a term in Raft? How long does it last?"


def test_a_question_with_long_runs_of_spaces_is_read_in_linear_time():
    # The clause boundary tried "\s*" then "\s+" from each space of a run: cubic in its
    # length (1,000 spaces took 5 s, a 4,000-character question minutes of a worker).
    from chat.rag.strategies import split_clauses

    gap = " " * 200_000
    assert split_clauses(f"What is Raft{gap}and how does it elect a leader? ; and why") == [
        "What is Raft", "how does it elect a leader", "and why"]
    assert split_clauses(f"a{gap}") == ["a"]
    assert is_follow_up(f"How long does{gap}it last?") is True
    assert is_follow_up(f"What is Raft{gap}and how does it elect a leader?") is False
    assert search_question(f"it{gap}", [{"role": "user", "content": "What is Raft?"}]) == f"What is Raft? it{gap}"
    # An earlier question of a caller's own history may be longer: each name's "opens a
    # sentence" stripped all the text before it (900,000 characters took 27 s).
    names = "Xx " * 300_000
    assert search_question("What is its default?", [{"role": "user", "content": f"{names}its default?"}]) == (
        f"{names}its default? What is its default?")

@pytest.fixture
def two_domains(db, tmp_path, settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    return [
        domain_of(tmp_path, "orbitals", "Orbitals documentation", {"io.md": (
            "# Reading files\n\nOrbitals opens netCDF files with `open_dataset`, which reads the variables lazily.\n\n"
            "## Example\n\nAn example of opening a netCDF file:\n\n"
            "```\nds = orbitals.open_dataset(\"air.nc\")\n```\n")}),
        domain_of(tmp_path, "kitchen", "Kitchen documentation", {"bread.md": (
            "# Bread\n\nKnead the dough for ten minutes, then let it rise in a warm place for an hour.\n\n"
            "## Example\n\nAn example of a quick loaf: flour, water, salt and yeast, baked for forty minutes.\n")}),
    ]


def test_a_follow_up_in_a_session_keeps_the_conversations_domain_and_topic(two_domains):
    session = ChatSession.objects.create()
    first = run(NETCDF, two_domains, session_id=session.pk)
    assert (first.answer.route, first.answer.domains) == ("domains", ["orbitals"])

    second = run(EXAMPLE, two_domains, session_id=session.pk)

    assert trace(second)[0].endswith(f"; follow-up, searched as: {NETCDF} {EXAMPLE}")
    assert (second.answer.route, second.answer.domains) == ("domains", ["orbitals"])
    assert second.answer.text == "An example of opening a netCDF file [1]:\n\n```\nds = orbitals.open_dataset(\"air.nc\")\n```"
    assert [r["file_name"] for r in second.references] == ["io.md"]
    # Only the question itself enters the history.
    assert list(session.messages.filter(role="user").values_list("content", flat=True)) == [NETCDF, EXAMPLE]


def test_a_follow_up_in_a_callers_own_history_is_searched_the_same_way(two_domains):
    history = [{"role": "user", "content": NETCDF}, {"role": "assistant", "content": "Use open_dataset [1]."}]
    result = run(EXAMPLE, two_domains, history=history)
    assert (result.answer.route, result.answer.domains) == ("domains", ["orbitals"])
    assert [r["file_name"] for r in result.references] == ["io.md"]
    alone = run(EXAMPLE, two_domains)
    assert trace(alone)[0] == "memory: no session"
    assert alone.answer.route == "refused"


def test_a_question_naming_what_its_pronoun_stands_for_is_not_searched_with_the_one_before(two_domains):
    session = ChatSession.objects.create()
    run(NETCDF, two_domains, session_id=session.pk)

    second = run("What is bread and how long does it rise?", two_domains, session_id=session.pk)

    assert trace(second)[0] == "memory: 2 messages (216 chars), summary 0 chars"
    assert (second.answer.route, second.answer.domains) == ("domains", ["kitchen"])
    assert second.answer.text == "Knead the dough for ten minutes, then let it rise in a warm place for an hour. [1]"
    assert [r["file_name"] for r in second.references] == ["bread.md"]


def test_an_off_topic_question_whose_it_names_nothing_is_refused_after_a_domains_question(two_domains):
    session = ChatSession.objects.create()
    run(NETCDF, two_domains, session_id=session.pk)

    second = run("Is it going to rain tomorrow?", two_domains, session_id=session.pk)

    assert trace(second)[0] == "memory: 2 messages (216 chars), summary 0 chars"
    assert second.answer.route == "refused"

"""The model-free backend's turns on a real store: which domain a question goes to (one
domain takes a generic question or one about "it" when its sources hold the words; a
question naming what a domain or its documents name goes there, also in another
language) and how often a turn runs the embedding model."""

from __future__ import annotations

import pytest

from chat.backends import get_backend
from domains import embeddings, retrieval

from .pipeline_helpers import count_model_runs, domain_of, run, token_ids, trace


@pytest.fixture
def one_domain(db, tmp_path, settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    return [domain_of(tmp_path, "stellar", "Stellar documentation", {"about.md": (
        "# Stellar\n\nStellar catalogues variable stars from survey images and publishes their light curves.\n\n"
        "## Install\n\nInstall it with pip:\n\n```\npip install stellar-catalogue\n```\n")})]


def test_one_domain_takes_the_generic_question_and_refuses_off_topic(one_domain):
    generic = run("What does this project do?", one_domain)
    assert (generic.answer.route, generic.answer.domains) == ("domains", ["stellar"])
    assert generic.answer.text == (
        "Stellar catalogues variable stars from survey images and publishes their light curves. [1]"
    )
    howto = run("How do I install Stellar?", one_domain)
    assert howto.answer.text == "Install it with pip [1]:\n\n```\npip install stellar-catalogue\n```"
    off = run("What is the capital of Australia?", one_domain)
    assert off.answer.route == "refused"
    assert off.answer.text == "No source in stellar answers this question."  # the only domain there is


def test_a_generic_question_is_answered_by_the_overview_its_domain_description_finds(db, tmp_path, settings):
    # "What is this?" names nothing to search for: the description is searched beside it, and
    # the passage nearest to it in prose answers; a contents list's items only name parts.
    settings.KLEA_LLM_BACKEND = "extractive"
    domains = [domain_of(tmp_path, "nebula", "Nebula: stitching telescope exposures into sky mosaics", {
        "index.md": "# Nebula\n\n- Install: get it running\n- Mosaics: the stitching options\n- API: the functions\n\n"
                    "Nebula stitches overlapping telescope exposures into calibrated sky mosaics.\n",
        "api.md": "# API\n\nThis is the reference of every function: what each does and what it returns.\n",
        "install.md": "# Install\n\nThis takes a minute: run `pip install nebula-mosaic`.\n",
    })]
    for question in ("What is this?", "What does this project do?"):
        turn = run(question, domains)
        assert (turn.answer.route, turn.answer.text) == (
            "domains", "Nebula stitches overlapping telescope exposures into calibrated sky mosaics. [1]")
        assert [r["file_name"] for r in turn.references] == ["index.md"]


def test_a_generic_question_searches_at_most_max_queries_descriptions(db, tmp_path, settings):
    # Each query is searched in every routed domain: one description per domain would make
    # a generic question to n domains n + 1 queries in each, as many as a model may write instead.
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_MAX_QUERIES = 3
    names = ["alpha", "beta", "gamma", "delta"]
    domains = [domain_of(tmp_path, name, f"The {name} notes", {"index.md": f"# {name}\n\nThe {name} notes say hello.\n"})
               for name in names]
    turn = run("What is this?", domains, pick=names)
    line = next(line for line in trace(turn) if line.startswith("generate_queries"))
    assert line == "generate_queries: What is this?; The alpha notes; The beta notes (the question) and the domain descriptions"

def test_one_domain_takes_a_question_naming_its_subject_it_when_its_sources_hold_the_words(one_domain):
    # "it" leaves the question one content word: the dense evidence is low (no subject to
    # match), the lexical evidence whole (the sources say "install"); a dummy "it" with
    # words the sources never use stays out
    pronoun = run("How do I install it?", one_domain)
    assert (pronoun.answer.route, pronoun.answer.domains) == ("domains", ["stellar"])
    # its best passage's cosine is low for the same reason; it holds the word asked about
    assert pronoun.answer.text == "Install it with pip [1]:\n\n```\npip install stellar-catalogue\n```"
    rain = run("Is it going to rain tomorrow?", one_domain)
    assert (rain.answer.route, rain.answer.domains) == ("refused", [])


def test_a_question_naming_what_a_domain_or_its_documents_name_is_routed_there(one_domain, tmp_path):
    # Neither the paper's author nor its year is in its text: the domain's description
    # names the author, the document's file name the author and the year.
    papers = domain_of(tmp_path, "papers", "Classic papers: mutual exclusion (Dijkstra)", {"dijkstra1965_cacm.md": (
        "# Solution of a problem in concurrent programming control\n\n"
        "A number of mainly independent sequential-cyclic processes with restricted means of communication with "
        "each other can be made in such a way that at any moment one and only one of them is engaged in the "
        "critical section of its cycle.\n")})
    domains = [papers, *one_domain]
    for question in ("What problem does Dijkstra solve in his 1965 paper?", "What problem did the 1965 paper solve?"):
        result = run(question, domains)
        assert (result.answer.route, result.answer.domains) == ("domains", ["papers"]), question
    off = run("What is the capital of France?", domains)
    assert (off.answer.route, off.answer.domains) == ("refused", [])
    # In another language, the names and numbers are the evidence there is; its small
    # words ("die", "von") are none
    german = run("Was löst Dijkstra in seinem Artikel von 1965?", domains)
    assert (german.answer.route, german.answer.domains) == ("domains", ["papers"])
    off = run("Was ist die Hauptstadt von Frankreich?", domains)
    assert (off.answer.route, off.answer.domains) == ("refused", [])


def test_what_an_acronym_stands_for_is_asked_of_the_domain_that_spells_it_out(db, tmp_path, settings):
    # The uncased embedding reads COMBINE as the verb the arrays domain uses everywhere;
    # the standards domain spells it out, in a chunk neither ranked list puts first.
    settings.KLEA_LLM_BACKEND = "extractive"
    pages = {
        "arrays": {"combining.md": "# Combining data\n\nCombine arrays along a dimension with combine_nested; "
                                   "combine_by_coords combines datasets by their coordinates.\n",
                   "merge.md": "# Merging\n\nMerge and combine datasets with different variables.\n"},
        "standards": {"meetings.md": "# Meetings\n\nThe COMBINE forum meets each autumn; COMBINE and HARMONY "
                                     "alternate.\n",
                      "standards.md": "# Standards\n\nNeuroML is an official standard of the community.\n\n"
                                      "## Community\n\nThe \"COmputational Modeling in BIology NEtwork\" (COMBINE) "
                                      "is an initiative to coordinate community standards.\n"},
    }
    domains = [domain_of(tmp_path, "arrays", "Labelled arrays: combine, merge and align datasets", pages["arrays"]),
               domain_of(tmp_path, "standards", "Modelling standards and their community", pages["standards"])]
    result = run("What does the acronym COMBINE stand for?", domains)
    assert (result.answer.route, result.answer.domains) == ("domains", ["standards"])
    assert result.answer.text == ('The "COmputational Modeling in BIology NEtwork" (COMBINE) is an initiative to '
                                  "coordinate community standards. [1]")


@pytest.mark.django_db
@pytest.mark.parametrize("text, language, words", [
    ("Wie wählt Raft einen Anführer?", "german", {"wählt", "raft", "anführer"}),
    ("Comment Raft élit-il un leader ?", "french", {"comment", "raft", "élit-il", "élit", "leader"}),
    ("What problem does Dijkstra solve in his 1965 paper?", "english", {"problem", "dijkstra", "solve", "1965", "paper"}),
    ("Raft 1965", "english", {"raft", "1965"}),  # no small words: the sources' language
])
def test_the_language_of_a_question_is_that_of_its_stop_words(text, language, words):
    assert retrieval.lexemes_and_language(text) == (retrieval.query_lexemes(text), language)
    assert set(retrieval.content_words(text, language).split()) == words


@pytest.mark.django_db
@pytest.mark.parametrize("text, language", [
    ("Wie starte ich Stellar auf einem anderen Port?", "german"),  # stop words, as routing reads them
    ("Was macht dieses Projekt?", "german"),  # two German stop words ("was" is English too)
    ("Welche Formate unterstützt Stellar?", "german"),  # one, and a letter outside ASCII
    ("max MCP tool calls per question?", "english"),  # one Italian stop word ("per"), ASCII
    ("Как установить Stellar?", "russian"),
    ("如何安装Stellar？", "chinese"),  # no stop-word list: by the script of most letters (a tie included)
    ("Stellar をインストールするには？", "japanese"),  # kana among the Han characters
    ("Stellar를 어떻게 설치하나요?", "korean"),
    ("What does 'crêpe' mean?", "english"),  # Latin letters with accents
    ("What is 如何?", "english"),
    ("Stellar 1965", "english"),
])
def test_the_language_a_question_is_asked_in(text, language):
    assert retrieval.question_language(text) == language


def test_a_question_in_another_language_is_refused_with_the_reason(one_domain, tmp_path):
    # The embedding model is English: a question in another language matches no source, and
    # the reply says why instead of "No source in stellar answers this question."
    for question, language in (("Wie installiere ich das?", "German"), ("如何安装？", "Chinese")):
        turn = run(question, one_domain)
        assert (turn.answer.route, turn.answer.domains) == ("refused", [])
        assert turn.answer.text == (
            f"This question seems to be in {language}. Klea matches questions to its sources in English (its "
            "embedding model, all-MiniLM-L6-v2, was trained on English text), so please ask it in English.")
    several = [*one_domain, domain_of(tmp_path, "kitchen", "Recipes", {"bread.md": "# Bread\n\nBake it for an hour.\n"})]
    turn = run("Что это такое?", several)
    assert (turn.answer.route, turn.answer.text) == ("refused", (
        "This question seems to be in Russian. Klea matches questions to its sources in English (its embedding model, "
        "all-MiniLM-L6-v2, was trained on English text), so please ask it in English."))
    assert run("Как дела?", several).answer.text.startswith("This question seems to be in Russian.")


def test_a_question_in_another_language_routed_by_a_name_and_declined_is_told_the_reason(one_domain):
    # "Stellar" routes it (a name the sources hold); no passage answers its German words.
    turn = run("Wie aktualisiere ich Stellar auf einem anderen Rechner?", one_domain)
    assert turn.answer.route == "domains"
    assert turn.answer.text == (
        "No source in stellar answers this question. This question seems to be in German. Klea matches questions "
        "to its sources in English (its embedding model, all-MiniLM-L6-v2, was trained on English text), so please "
        "ask it in English.")


def test_a_turn_embeds_the_question_once_and_cached_passages_never_again(one_domain, monkeypatch):
    monkeypatch.setattr(embeddings, "cache", embeddings.VectorCache(embeddings.CACHE_SIZE))  # as a fresh process
    runs = count_model_runs(monkeypatch)
    question = "How do I install Stellar?"
    ids = token_ids(question)
    first = run(question, one_domain)
    # classify, retrieve and answer share one vector; the rest are the domain's
    # description and the candidate passages, each once
    assert runs.count(ids) == 1 and len(runs) > 2
    assert len(embeddings.cache) == len(runs) - 1
    runs.clear()
    second = run(question, one_domain)
    assert runs == [ids]
    assert second.answer.text == first.answer.text == (
        "Install it with pip [1]:\n\n```\npip install stellar-catalogue\n```")


def test_the_backend_warm_up_embeds_the_descriptions_before_the_first_question(one_domain, monkeypatch):
    monkeypatch.setattr(embeddings, "cache", embeddings.VectorCache(embeddings.CACHE_SIZE))
    runs = count_model_runs(monkeypatch)
    get_backend().warm_up(one_domain)  # what warm_up_backend does before /health says ready
    description = token_ids("stellar: Stellar documentation")
    assert runs == [token_ids("warm up"), description]
    runs.clear()
    run("How do I install Stellar?", one_domain)
    assert description not in runs and runs.count(token_ids("How do I install Stellar?")) == 1


def test_a_listing_question_is_routed_by_its_subject_not_its_frame(db, tmp_path, settings):
    # "Which stacking methods are available?": the sources name the methods (median, mean)
    # and never say "methods" or "available" beside them, while every page says "stacking"
    # (a low idf); only the access page says "available". Counted as missing, the frame
    # words kept the domain under the threshold.
    settings.KLEA_LLM_BACKEND = "extractive"
    domains = [domain_of(tmp_path, "nebula", "Nebula: sky mosaics from telescope exposures", {
        "stacking.md": "# Stacking\n\nExposures are stacked by a median or a sigma-clipped mean of each pixel.\n",
        "mosaics.md": "# Mosaics\n\nStacking comes before stitching: the stacked frames are aligned by their stars.\n",
        "install.md": "# Install\n\nRun `pip install nebula-mosaic`; stacking needs numpy.\n",
        "access.md": "# Access\n\nThe archive is available to members only.\n",
    })]
    result = run("Which stacking methods are available?", domains)
    assert (result.answer.route, result.answer.domains) == ("domains", ["nebula"])
    assert result.answer.text == ("Stacking comes before stitching: the stacked frames are aligned by their stars. [1] "
                                  "Exposures are stacked by a median or a sigma-clipped mean of each pixel. [2]")
    off = run("Which vaccines are available in France?", domains)
    assert (off.answer.route, off.answer.domains) == ("refused", [])


PAPER = ("# Observation of gravitational waves from a binary black hole merger\n\n"
         "Both detectors recorded a transient gravitational-wave signal; its waveform matches the inspiral and "
         "merger of two black holes of 36 and 29 solar masses.\n\n"
         "## Affiliations\n\n"
         "1 Australian National University, Canberra, Australian Capital Territory 0200, Australia\n"
         "2 University of Tokyo, Kashiwa, Chiba 277-8582, Japan\n\n"
         "## References\n\n"
         "[1] A. Einstein, Sitzungsber. Preuss. Akad. Wiss. Berlin, 688 (1916).\n"
         "[2] L. Blanchet, Gravitational radiation from post-Newtonian sources, Living Rev. Relativity 17, 2 (2014).\n")


def test_words_a_paper_holds_only_in_its_affiliations_or_references_route_nothing_there(db, tmp_path, settings):
    # "Canberra, Australian Capital Territory" holds "capital" and "Australia", the whole
    # question; an affiliation or a reference entry says where a paper comes from and what
    # it cites, never what it is about.
    settings.KLEA_LLM_BACKEND = "extractive"
    domains = [domain_of(tmp_path, "papers", "Physics papers", {"gw150914.md": PAPER})]
    for question in ("What is the capital of Australia?", "What is the population of Tokyo?",
                     "How is gravitational radiation from post-Newtonian sources computed?"):
        off = run(question, domains)
        assert (off.answer.route, off.answer.domains) == ("refused", []), question
    answered = run("What masses did the two merging black holes have?", domains)
    assert (answered.answer.route, answered.answer.domains) == ("domains", ["papers"])

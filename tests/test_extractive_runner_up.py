"""When the extractive backend quotes more than its best passage (issue 13): a near
tie, the runner-up that adds the question terms the best one lacks (within a wider
window, or below the similarity floor when it holds every term), a third passage, two
subjects each with its own entry; passages of one chunk read in their order, a
passage repeated in another file, or restated in nearly the same words, quoted once, and
another file stating the same cited beside the quoted passage."""

from __future__ import annotations

from types import SimpleNamespace

from chat.backends.extractive.candidates import Chunk, Passage, units_of
from chat.backends.extractive.followers import MIN_SIMILARITY, NEAR_TIE, SECOND_CHARS, THIRD_TIE, WIDE_TIE, restates
from chat.backends.extractive.passages import Composer, in_reading_order
from domains import embeddings

from .extractive_helpers import answer, answer_citing, source


SEASONS = (
    "Grouping by time.season uses the seasons DJF, MAM, JJA and SON, sorted alphabetically in the result.\n\n"
    "Resampling needs a SeasonResampler; the pandas frequency strings cannot express custom seasons.\n\n"
    "With a SeasonGrouper the seasons are kept in the order given, unlike grouping by time.season."
)


def test_a_near_tie_quotes_both_passages_in_the_order_of_their_section():
    # The third paragraph scores best, the first within NEAR_TIE: both, first paragraph first.
    assert answer("Which seasons does grouping by time.season use?", source(1, SEASONS, ["Time series", "Seasons"])) == (
        "Grouping by time.season uses the seasons DJF, MAM, JJA and SON, sorted alphabetically in the result. "
        "With a SeasonGrouper the seasons are kept in the order given, unlike grouping by time.season. [1]"
    )


GLOSSARY = (
    "- Domain — a knowledge area (\"NeuroML documentation\"). Its description tells the classifier what it "
    "covers. Each domain has stores and, optionally, filter fields.\n"
    "- Store (collection) — the chunks of a set of documents, searched by vector, BM25 or both.\n"
    "- Document — one source file of a store; chunk — a piece of at most about 450 tokens under its heading chain.\n"
    "- Filter field — a metadata field (year, authors, ...) questions may filter on."
)
USAGE = (
    "Describe your domain in a JSON file, load it, then build a store from a folder. "
    "A store of a domain is searched whenever a question is routed to that domain."
)


def test_what_is_x_and_what_is_y_quotes_the_entry_defining_each():
    # Two subjects: the glossary entry defining the one, then the entry defining the other
    # (whose cosine to the whole question is low), not the sentences merely naming both.
    assert answer("What is a domain and what is a store?", source(1, USAGE, ["Getting started", "Your own documents"],
                                                                  score=0.9),
                  source(2, GLOSSARY, ["Getting started", "Concepts"], score=0.5)) == (
        "- Domain — a knowledge area (\"NeuroML documentation\"). Its description tells the classifier what it "
        "covers. Each domain has stores and, optionally, filter fields.\n\n"
        "- Store (collection) — the chunks of a set of documents, searched by vector, BM25 or both. [2]"
    )


def test_a_passage_repeated_in_another_file_is_quoted_once():
    text = "Create a user with manage.py createsuperuser, then open the admin."
    # The same file in two stores: equal scores, the first source speaks, once.
    assert answer("How do I create an admin user?", source(1, text, ["Admin"], file_name="README.md"),
                  source(2, text, ["Admin"], file_name="README.md")) == f"{text} [1]"


def _stored(number, text, headings, score, file_name, chunk_id):
    """A numbered source of one stored chunk (its id known; no document id, so no neighbour is read)."""
    chunk = SimpleNamespace(text=text, headings=list(headings), score=score, chunk_id=chunk_id)
    return SimpleNamespace(number=number, file_name=file_name, chunks=[chunk])


def test_a_passage_of_another_file_stating_the_same_is_cited_beside_the_quoted_one():
    # Two pages state the endorsement (embeddings 0.93 apart, the same question terms,
    # scores 0.18 apart): the best is quoted, the other file cited with it, its marker
    # recording its own chunk.
    question = "Which organisation endorses NeuroML as a standard?"
    text, cited = answer_citing(
        question,
        _stored(1, "NeuroML is an INCF endorsed standard.", ["Standards"], 0.8, "Standards.md", 11),
        _stored(2, "NeuroML is endorsed by the INCF, and is also an official COMBINE standard.", ["Mission and Aims"],
                0.6, "MissionAndAims.md", 22),
    )
    assert (text, cited) == ("NeuroML is an INCF endorsed standard. [1][2]", [[11], [22]])


def test_the_same_sentence_in_three_files_cites_one_more_the_best_scored():
    text = ("NEST is a simulator for spiking neural network models that focuses on the dynamics, size and structure "
            "of neural systems.")
    assert answer("What kind of simulator is NEST?", source(1, text, ["NEST"], score=0.9, file_name="NEST.md"),
                  source(2, text, ["Supporting tools"], score=0.5, file_name="SupportingTools.md"),
                  source(3, text, ["Simulators"], score=0.4, file_name="Simulators.md")) == f"{text} [1][3]"


def test_a_passage_of_another_file_about_another_year_is_not_the_same_statement():
    # Worded alike (the same sentence but for the year), but it lacks the question's "2024".
    assert answer("When is the NeuroML tutorial at CNS 2024?",
                  source(1, "The NeuroML tutorial at CNS 2024 is on 20 July. To take part in the tutorial, please "
                            "register here for CNS 2024.", ["CNS 2024"], score=0.8, file_name="CNS2024.md"),
                  source(2, "The NeuroML tutorial at CNS 2021 was on 3 July. To take part in the tutorial, please "
                            "register here for CNS 2021.", ["CNS 2021"], score=0.6, file_name="CNS2021.md")) == (
        "The NeuroML tutorial at CNS 2024 is on 20 July. To take part in the tutorial, please register here for "
        "CNS 2024. [1]"
    )


def _scored(chunk, start, text, score, found):
    passage = Passage(chunk, start, start, "prose", text)
    passage.score, passage.cosine, passage.found = score, 0.6, set(found)
    return passage


def _composing(question, headings):
    """A composer for ``question``, one chunk under ``headings`` and every question term at idf 1."""
    composer = Composer(embeddings.embed_query(question), [], question)
    return composer, Chunk(1, 0, 0.5, headings, []), dict.fromkeys(composer.wanted, 1.0)


def test_of_two_near_ties_the_one_adding_what_the_best_lacks_follows_it():
    # Both runners-up score within NEAR_TIE of the best: the evidence cannot tell them
    # apart, but only the lower one holds "sdk", which the best passage lacks.
    composer = Composer(embeddings.embed_query("Which SDK does Klea use to call MCP tools?"), [],
                        "Which SDK does Klea use to call MCP tools?")
    chunk = Chunk(1, 0, 0.5, "MCP tools", [])
    idf = {"sdk": 1.0, "klea": 0.5, "call": 0.5, "mcp": 0.5, "tool": 0.5}
    best = _scored(chunk, 0, "Klea is also an MCP server: other MCP clients can call its tools.", 1.16,
                   {"klea", "mcp", "call", "tool"})
    tie = _scored(chunk, 1, "This page is Klea as an MCP client, calling the tools of MCP servers.", 1.15,
                  {"klea", "mcp", "call", "tool"})
    adding = _scored(chunk, 2, "The calls go through the official mcp Python SDK.", 1.16 - NEAR_TIE + 0.02,
                     {"mcp", "call", "sdk"})
    assert composer._second(best, [tie, adding], idf, sum(idf.values())) is adding
    # A runner-up that is no near tie does not displace one that is.
    adding.score = 1.16 - NEAR_TIE - 0.02
    assert composer._second(best, [tie, adding], idf, sum(idf.values())) is tie


def test_a_sentence_restated_in_nearly_the_same_words_never_follows_itself():
    # A paper's abstract sentence repeated in its introduction with a word changed: the
    # restatement scores within NEAR_TIE of it, yet the next near tie follows.
    question = "What does a level ancestor query ask for?"
    composer = Composer(embeddings.embed_query(question), [], question)
    abstract, intro = Chunk(1, 0, 0.96, "Level ancestors", []), Chunk(1, 1, 0.78, "1. Introduction", [])
    idf = {"level": 1.0, "ancestor": 1.0, "query": 1.0, "ask": 2.0}
    found = {"level", "ancestor", "query"}
    best = _scored(abstract, 0, "The Level Ancestor Problem is to preprocess a given rooted tree T to support "
                   "level ancestor queries.", 1.11, found)
    restated = _scored(intro, 1, "The Level Ancestor Problem is thus to preprocess a given n-node rooted tree T "
                       "to support level ancestor queries.", 1.07, found)
    answering = _scored(abstract, 1, "A Level Ancestor Query LA(v; d) requests the depth d ancestor of node v.",
                        1.04, found)
    assert composer._second(best, [restated, answering], idf, sum(idf.values())) is answering
    assert restates(best.text, restated.text) and not restates(best.text, answering.text)
    assert not restates("The model is fitted to the data.", "The model is fitted to the data in three steps, "
                        "each of which is described in its own section of this paper.")  # more than twice as long


def test_without_a_near_tie_the_runner_up_within_the_wide_window_follows_when_it_adds():
    question = "Are zero-length segments allowed in NeuroML?"
    composer = Composer(embeddings.embed_query(question), [], question)
    chunk = Chunk(1, 0, 0.5, "Zero length segments", [])
    idf = {"zero": 1.0, "length": 1.0, "segment": 1.0, "allow": 1.0, "neuroml": 0.5}
    best = _scored(chunk, 0, "SWC reconstructions with adjacent points give zero length segments.", 1.30,
                   {"zero", "length", "segment"})
    # It adds "neuroml" (0.5 of 4.5: too little to follow as a passage that adds).
    runner_up = _scored(chunk, 1, "So the application loading the NeuroML decides whether this is an issue.",
                        1.30 - WIDE_TIE + 0.02, {"neuroml"})
    assert composer._second(best, [runner_up], idf, sum(idf.values())) is runner_up
    # Past the wide window nothing follows, nor within it one adding no question term.
    runner_up.score = 1.30 - WIDE_TIE - 0.02
    assert composer._second(best, [runner_up], idf, sum(idf.values())) is None
    runner_up.score, runner_up.found = 1.30 - WIDE_TIE + 0.02, {"segment"}
    assert composer._second(best, [runner_up], idf, sum(idf.values())) is None
    # Within it, a near tie goes first.
    runner_up.found = {"neuroml"}
    tie = _scored(chunk, 2, "Simulators mapping each segment to a compartment could have an issue.", 1.30 - NEAR_TIE,
                  {"segment"})
    assert composer._second(best, [runner_up, tie], idf, sum(idf.values())) is tie


def test_to_which_are_a_list_within_the_wide_window_follows_prose_though_it_adds_no_term():
    question = "Which CF attributes are decoded as coordinates?"
    composer, chunk, idf = _composing(question, "CF conventions")
    best = _scored(chunk, 0, "CF attributes are decoded as coordinates by xarray.", 1.0, composer.wanted)
    listed = _scored(chunk, 1, "A few are parsed:\n\n- `coordinates`\n- `bounds`", 1.0 - WIDE_TIE + 0.02, {"attribut"})
    listed.kind = "list"
    assert composer._second(best, [listed], idf, sum(idf.values())) is listed
    # Prose adding nothing stays out; so does a list when the best passage is one.
    listed.kind = "prose"
    assert composer._second(best, [listed], idf, sum(idf.values())) is None
    listed.kind = best.kind = "list"
    assert composer._second(best, [listed], idf, sum(idf.values())) is None


def test_to_which_are_the_list_after_prose_goes_before_a_near_tie_or_a_passage_adding_terms():
    question = "Which CF attributes are decoded as coordinates?"
    composer, chunk, idf = _composing(question, "CF conventions")
    best = _scored(chunk, 0, "The `coordinates` attribute lists coordinate variables.", 1.0,
                   {"attribut", "coordinat"})
    # prose pointing back at the list, a near tie; prose adding "decod" (half the question)
    tie = _scored(chunk, 1, "The attributes above are read as coordinates.", 1.0 - NEAR_TIE / 2,
                  {"attribut", "coordinat"})
    adding = _scored(chunk, 2, "Decoding CF times is a multistage process.", 1.0 - NEAR_TIE - 0.02, {"cf", "decod"})
    listed = _scored(chunk, 3, "A few are parsed:\n\n- `coordinates`\n- `bounds`", 1.0 - WIDE_TIE + 0.02,
                     {"attribut"})
    listed.kind = "list"
    assert composer._second(best, [tie, adding, listed], idf, sum(idf.values())) is listed
    # past the wide window the list waits its turn
    listed.score = 1.0 - WIDE_TIE - 0.02
    assert composer._second(best, [tie, adding, listed], idf, sum(idf.values())) is tie


def test_a_runner_up_holding_every_question_term_follows_below_the_similarity_floor():
    question = "What is the default minimum relevance of vector hits?"
    composer = Composer(embeddings.embed_query(question), [], question)
    assert composer.wanted == {"default", "minimum", "relevanc", "vector", "hits"}
    chunk = Chunk(1, 0, 0.5, "Retrieval", [])
    idf = dict.fromkeys(composer.wanted, 1.0)
    best = _scored(chunk, 0, "Vector hits below the domain's min_relevance (default 0.15) are dropped.", 0.90,
                   {"default", "vector", "hits"})
    holding = _scored(chunk, 1, "- min_relevance (0.15, the minimum cosine similarity of vector hits)", 0.87,
                      composer.wanted)
    holding.cosine = MIN_SIMILARITY - 0.02
    assert composer._second(best, [holding], idf, sum(idf.values())) is holding
    # One lacking a question term stays below the floor (the word "relevance" gone).
    holding.found = composer.wanted - {"relevanc"}
    assert composer._second(best, [holding], idf, sum(idf.values())) is None
    # A term in the chunk's headings counts, as it does for declining (:meth:`Composer.holds_all`).
    holding.chunk = Chunk(1, 1, 0.5, "Domains > Relevance", [])
    assert composer._second(best, [holding], idf, sum(idf.values())) is holding


def test_a_third_passage_follows_when_it_scores_within_the_third_tie_of_the_best():
    question = "When concat makes a new dimension, where is it placed?"
    composer, chunk, idf = _composing(question, "Combining data > Concatenate")
    best = _scored(chunk, 0, "concat can create a new dimension by stacking arrays.", 0.77, {"concat", "new", "dimension"})
    second = _scored(chunk, 1, "The second argument to concat labels the new dimension.", 0.76, {"concat", "new"})
    placed = _scored(chunk, 2, "A new dimension name is always inserted as the first dimension.", 0.77 - THIRD_TIE + 0.01,
                     {"new", "dimension"})
    closer = _scored(chunk, 3, "Concatenating along a new dimension stacks the arrays.", 0.77 - THIRD_TIE + 0.02,
                     {"new", "dimension"})
    # Of two, the one adding "plac" (only in its found terms here) to what the first two hold.
    placed.found.add("plac")
    assert composer._third([best, second], [placed, closer], idf, sum(idf.values())) is placed
    # Further behind than THIRD_TIE, or past SECOND_CHARS for the three, none.
    placed.score = closer.score = 0.77 - THIRD_TIE - 0.01
    assert composer._third([best, second], [placed, closer], idf, sum(idf.values())) is None
    placed.score, placed.text = 0.77, "x" * (SECOND_CHARS - len(best.text) - len(second.text) + 1)
    assert composer._third([best, second], [placed], idf, sum(idf.values())) is None


def test_passages_of_one_chunk_read_together_in_their_order():
    first, other = Chunk(1, 0, 0.5, "A", []), Chunk(2, 1, 0.4, "B", [])
    best = Passage(first, 4, 4, "prose", "Best.")
    elsewhere = Passage(other, 0, 0, "prose", "Elsewhere.")
    before = Passage(first, 1, 1, "prose", "Before the best.")
    assert [p.text for p in in_reading_order([best, elsewhere, before])] == ["Before the best.", "Best.", "Elsewhere."]


EMBEDDED_DATABASE = (
    "Without `DATABASE_URL`, every process (manage.py, daphne, Celery, pytest) starts or reuses the PostgreSQL "
    "server of the PyPI package `pgserver`. It listens only on a Unix socket inside `var/pgdata`, keeps running "
    "between commands and is stopped with `make stop-db` (`manage.py embedded_db stop`)."
)
CANCELLATION = (
    "- Cancellation: `turn.cancel()` cancels the task. The model's HTTP stream is closed at once (the server stops "
    "generating), the partial answer is stored with status `interrupted`. Work already running in a thread (an "
    "embedding, a SQL query) finishes in the background; nothing waits for it except the final database write."
)


def test_what_the_sentence_leaned_back_to_says_is_not_added_again():
    # The best passage ("... is stopped with `make stop-db`") leans back to the sentence
    # naming the database; a bullet holding "stops", "embedding" and "database" by chance
    # adds nothing to that and is not tacked on (it did when "database" counted as new).
    assert answer("How do I stop the embedded database?",
                  source(1, EMBEDDED_DATABASE, ["Configuration", "The embedded database"], score=0.95),
                  source(2, CANCELLATION, ["The question pipeline", "Calling it"], score=0.8)) == (
        f"{EMBEDDED_DATABASE} [1]"
    )


DUTIES = (
    "The Quill steering committee has the following responsibilities:\n\n"
    "- To advise on the scientific focus of the Quill initiative and on the structure of its file format.\n"
    "- To agree on the technical implementation of the core specifications, with the editors.\n"
    "- To decide how the Quill initiative spends its funding and which workshops it holds.\n"
    "- To promote Quill internationally, both the core specifications and the tools which support them."
)


def test_the_items_of_a_list_scoring_alike_are_all_quoted():
    # Each duty is an item of its own (the list is long); they score alike, so every one
    # follows, in the list's order (a second and a third passage only left the first out).
    assert answer("What is the Quill steering committee responsible for?",
                  source(1, DUTIES, ["Quill", "Steering committee"]),
                  source(2, "The Quill editors maintain the documentation and work with the steering committee, who "
                            "provide oversight.", ["Quill", "Editors"])) == (
        "- To advise on the scientific focus of the Quill initiative and on the structure of its file format.\n\n"
        "- To agree on the technical implementation of the core specifications, with the editors.\n\n"
        "- To decide how the Quill initiative spends its funding and which workshops it holds.\n\n"
        "- To promote Quill internationally, both the core specifications and the tools which support them. [1]"
    )


def _item(chunk, start, part, text, score):
    passage = Passage(chunk, start, start, "item", text, part=part)
    passage.score, passage.cosine, passage.found = score, 0.6, set()
    return passage


def test_siblings_are_the_items_of_a_chosen_items_list_within_the_near_tie():
    composer, chunk, _ = _composing("What is the committee responsible for?", "Committee")
    best = _scored(chunk, 0, "The editors work with the committee.", 1.0, {"committe"})
    item = _item(chunk, 2, 0, "- To advise.", 0.99)
    sibling = _item(chunk, 2, 1, "- To agree.", 1.0 - NEAR_TIE + 0.01)
    behind = _item(chunk, 2, 2, "- To decide.", 1.0 - NEAR_TIE - 0.01)
    other_list = _item(chunk, 5, 0, "- To promote.", 0.99)
    assert composer._siblings([best, item], [sibling, behind, other_list]) == [sibling]
    # Only within SECOND_CHARS for all of them.
    sibling.text = "x" * (SECOND_CHARS - len(best.text) - len(item.text) + 1)
    assert composer._siblings([best, item], [sibling]) == []
    # No item chosen, no list to complete.
    assert composer._siblings([best], [sibling, other_list]) == []
    # "The first step" asks for one item by its place: its neighbours do not follow.
    placing, _, _ = _composing("What is the first step of the committee?", "Committee")
    sibling.text = "- To agree."
    assert composer._siblings([best, item], [sibling]) == [sibling]
    assert placing._siblings([best, item], [sibling]) == []


STEPS = ("1. Heat a large skillet and start cooking the pasta.\n"
         "2. Finely slice the garlic and chop the parsley.\n"
         "3. Add the oil and garlic to the skillet and cook until golden.\n"
         "4. Toss the drained pasta in the skillet.")


def test_no_step_of_a_numbered_list_is_skipped():
    composer, _, _ = _composing("How do I make aglio e olio?", "Aglio e olio > Directions")
    chunk = Chunk(1, 0, 0.5, "Aglio e olio > Directions", units_of(STEPS))
    intro = _scored(chunk, 0, "Aglio e olio is pasta with garlic and olive oil.", 1.0, {"aglio", "olio"})
    one, three = _item(chunk, 0, 0, STEPS.split("\n")[0], 0.95), _item(chunk, 0, 2, STEPS.split("\n")[2], 0.93)
    # Steps 1 and 3 quoted: step 2 between them is added, scored as the lower of them.
    filled = composer.steps_between([intro, one, three])
    assert [(p.part, p.text, p.score) for p in in_reading_order(filled)] == [
        (-1, intro.text, 1.0), (0, one.text, 0.95),
        (1, "2. Finely slice the garlic and chop the parsley.", 0.93), (2, three.text, 0.93)]
    # When the steps between do not fit, the quoted ones stay (their numbers show the gap).
    intro.text = "x" * (SECOND_CHARS - len(one.text) - len(three.text))
    assert composer.steps_between([intro, one, three]) == [intro, one, three]
    # An unnumbered list's items may skip (a committee's duties are no procedure).
    dash = [_item(chunk, 0, n, f"- Duty {n}.", 0.9) for n in (0, 2)]
    assert composer.steps_between([intro, *dash]) == [intro, *dash]

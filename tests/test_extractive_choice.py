"""Which passages the extractive backend chooses (issue 13): by the question's shape (a
list for "which ... are" or "what goes into", a number for "how many", one step of a
long method), and when a second passage follows the best one (a near tie, or the
passage that adds the question terms the best one lacks)."""

from __future__ import annotations

import pytest

from chat.backends.extractive.candidates import CUT_CHARS, SHORT_LIST, Chunk, Passage, extend, units_of, with_list
from chat.backends.extractive.passages import (INSTRUCTION_UNDER_TASK, MIN_SIMILARITY, NEAR_TIE, SECOND_CHARS,
                                               THIRD_TIE, WIDE_TIE, Composer, in_reading_order)
from chat.backends.extractive.shapes import (BLOCK_OTHERWISE, CAUSE_FOR_WHY, CODE_FOR_WHY, CODE_OTHERWISE,
                                             NUMBER_FOR_HOW_MANY, POINTING_BACK, SPELLED_OUT_FOR_ACRONYM, bonus,
                                             enumerates, field, shapes)
from chat.backends.extractive.text import matches, terms

from domains import embeddings

from .extractive_helpers import answer, source


METHOD = (
    "1. Brown the beef in a large pot with a little oil, breaking it into small pieces as it cooks.\n"
    "2. Add the diced onions, peppers and garlic and cook until the onions are soft and translucent.\n"
    "3. Stir in the tomato paste, the spices and a pinch of salt, and cook for two more minutes.\n"
    "4. Pour in the crushed tomatoes and the stock, and bring everything to a gentle boil.\n"
    "5. Simmer for at least 45 minutes, stirring occasionally and adding water if it gets too dry.\n"
    "6. Stir in the kidney beans and the dark chocolate and heat through before serving."
)


def test_one_step_of_a_long_method_is_quoted_alone():
    # A list too long to read as an answer: the step that states it, marker kept.
    assert answer("How long should the chili simmer?", source(1, METHOD, ["Chili", "Directions"])) == (
        "5. Simmer for at least 45 minutes, stirring occasionally and adding water if it gets too dry. [1]"
    )


def test_a_short_list_is_quoted_whole_not_one_item():
    text = "- Spaghetti: 320 g\n- Eggs: 5\n- Guanciale (cubed): 150 g\n- Pecorino Romano (grated)"
    assert answer("How much spaghetti and guanciale do I need?", source(1, text, ["Carbonara", "Ingredients"])) == (
        f"{text} [1]"
    )



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



FORMATS = (
    "Supported file formats: Markdown (`.md`, `.markdown`, MyST `.myst`), reStructuredText (`.rst`, `.rest`), "
    "HTML (`.html`, `.htm`), plain text (`.txt`, `.text`), Word (`.docx`) and PDF (`.pdf`; scanned pages "
    "through OCR). Other files in a folder are skipped.\n\n"
    "A whole file has a budget too: a PDF of more than 2,000 pages fails at once, and a file whose format "
    "converter runs past ten minutes is stopped."
)


def test_which_x_are_supported_is_answered_by_the_sentence_listing_them_with_their_asides():
    assert answer("Which file formats can the server ingest?", source(1, FORMATS, ["Ingesting", "Conversion"])) == (
        "Supported file formats: Markdown (`.md`, `.markdown`, MyST `.myst`), reStructuredText (`.rst`, `.rest`), "
        "HTML (`.html`, `.htm`), plain text (`.txt`, `.text`), Word (`.docx`) and PDF (`.pdf`; scanned pages "
        "through OCR). [1]"
    )


@pytest.mark.parametrize("text, expected", [
    ("Grouping by season uses the seasons DJF, MAM, JJA and SON.", True),
    ("Formats: Markdown (`.md`, `.myst`), HTML (`.html`) and PDF (`.pdf`; scanned pages through OCR).", True),
    ("A PDF of more than 2,000 pages (the page budget) fails at once; a slow one is stopped.", False),
    ("- `value_type` is one of `string`, `int`, `float`, `list`; field names are identifiers.", True),
    ("One of the two files, the larger, is read first.", False),
    # an item starts where a word does: from each letter of "a.a.a..." the item ran to the run's end
    ("a." * 100_000 + ", b and c", True),
    ("+" + "a." * 100_000 + ", b and c", True),
    ("+.-, b and c", False),
    ("a." * 100_000, False),
])
def test_a_list_written_as_prose(text, expected):
    assert enumerates(text) is expected



@pytest.mark.parametrize("text, expected", [
    ("Whilst the features above allow many array libraries to be used with xarray, a package helps.", POINTING_BACK),
    ("Once you have these programming languages installed, install pyNeuroML.", POINTING_BACK),
    ("Xarray wraps array libraries that follow the Array API standard.", 0.0),
])
def test_a_sentence_pointing_back_at_what_it_speaks_of_lists_nothing(text, expected):
    assert bonus(shapes("Which array libraries can xarray wrap?"), "prose", text, False) == expected



MIGRATE = "```\nexport DATABASE_URL=postgres://db.example.org/klea\n.venv/bin/python manage.py migrate\n```"


@pytest.mark.parametrize("question, kind_of_section", [
    ("How do I migrate the database?", INSTRUCTION_UNDER_TASK),
    ("Which database does Klea migrate?", 0.0),  # no how-to: the section title is only evidence
])
def test_an_instruction_under_a_section_titled_by_the_task_answers_how_to(question, kind_of_section):
    # The same commands under "Migrating the database" and under "Examples": the first is the task's own section.
    composer = Composer(embeddings.embed_query(question), [
        source(1, MIGRATE, ["Configuration", "Migrating the database"]), source(2, MIGRATE, ["Configuration", "Examples"])],
        question)
    offered = composer.offered(composer._idf())
    under_task, elsewhere = (next(p for p in offered if p.chunk.number == n) for n in (1, 2))
    assert under_task.cheap - elsewhere.cheap == pytest.approx(kind_of_section, abs=1e-12)


DOMAIN_KEYS = (
    "- A store listed under both `vector_stores` and `bm25_stores` is searched both ways.\n"
    "- `value_type` is one of `string`, `int`, `float`, `list`; field names are identifiers.\n"
    "- Optional keys: `active`, `default_k` (8, chunks per domain), `k_max` (10), `k_inc` (1), `min_relevance` "
    "(0.15, the minimum cosine similarity of vector hits), `fusion` (`rrf` or `convex`) and `fusion_alpha` (0.5)."
)


def test_which_x_are_is_answered_by_the_item_of_a_long_list_naming_them_all():
    # "Which ... are" asks for a whole list, never a few of its items; an item that lists
    # the choices itself is a whole list.
    assert answer("Which value types can a filter field have?", source(1, DOMAIN_KEYS, ["Domains", "Keys"])) == (
        "- `value_type` is one of `string`, `int`, `float`, `list`; field names are identifiers. [1]"
    )


@pytest.mark.parametrize("kind, text, expected", [
    ("code", '```\nseries = pd.Series({"mean": float(arr.mean())})\n```', CODE_OTHERWISE + CODE_FOR_WHY),
    ("code", "Because a `DataArray` keeps its coordinates, convert it:\n\n```\nfloat(arr.mean())\n```",
     CODE_OTHERWISE + CODE_FOR_WHY + CAUSE_FOR_WHY),
    ("prose", "Aggregations return a `DataArray` because operations on one return another.", CAUSE_FOR_WHY),
])
def test_code_states_no_cause(kind, text, expected):
    # "Why ...?" is answered by prose giving the cause; a code block only does what it does.
    assert bonus(shapes("Why does mean on a DataArray not give a Python float?"), kind, text, False) == (
        pytest.approx(expected, abs=1e-12))


@pytest.mark.parametrize("question, expected", [
    ("When was the Neosim project completed?", {"year"}),
    ("When does a PDF need OCR according to the pre-check?", set()),  # a condition, not a time
    ("What happens when a query contains only stop words?", set()),
    ("Which seasons does grouping by time.season use?", {"listing"}),
    ("What aged cheeses are suggested for a carbonara?", {"listing"}),
    ("Which setting selects the LLM backend?", set()),  # a singular noun and a verb
    ("Which range of years can datetime64 represent?", set()),
    ("What goes in a LEMS Simulation file?", {"listing"}),
    ("What is in a zaatar spice mix?", {"listing"}),
    ("What goes into the sauce at the end of cooking?", set()),  # a step, not the contents
    ("What do I need installed before installing NeuroML?", {"listing"}),
    ("What does a release of the tools require?", {"listing"}),
    ("What is a LEMS file?", {"definition:lems file"}),
    ("What is a domain and what is a store?", {"definition:domain", "definition:store"}),
    ("What are domains and stores?", {"definition:domains", "definition:stores", "listing"}),
    ("How strong is homemade kvass?", {"number"}),
    ("What ratio of water to vinegar for pickled onions?", {"number"}),
    ("How old is the NeuroML project?", {"number"}),
    ("What time span can nanosecond datetimes cover?", {"number"}),  # a range of years, a quantity
    ("What range of ports may the server use?", {"number"}),
    ("How do I strengthen the sauce?", {"howto"}),
    ("Which cheese goes into fondue?", {"listing"}),  # what a dish holds, asked with a noun
    ("What liquids go into the crêpe batter?", {"listing"}),
    ("Which cheese goes into the sauce at the end?", set()),  # a step of the method
    ("What does the acronym LEMS stand for?", {"acronym:LEMS"}),  # as written: the form is case-sensitive
])
def test_question_shapes(question, expected):
    assert set(shapes(question)) == expected


@pytest.mark.parametrize("text, fits", [
    ("There are three Levels of compliance.", True),
    ("The sugar should yield 1.0%-2.5% alcohol.", True),
    ("Bake it for half an hour.", True),
    ("No one knows the levels of compliance.", False),  # "one" is a pronoun here
    ("A level can have at most one parent level.", True),  # ... and a quantity here
    ("Keep it in the fridge for up to one week.", True),
    ("Let it rest for one hour.", True),
    ("The levels of compliance are described below.", False),
])
def test_a_number_in_digits_or_words_answers_how_many(text, fits):
    value = bonus(shapes("How many levels of compliance are there?"), "prose", text, False)
    assert value == (NUMBER_FOR_HOW_MANY if fits else 0.0)


@pytest.mark.parametrize("kind, text, fits", [
    ("prose", "NeuroML2 is built on the LEMS (Low Entropy Model Specification) language.", True),
    ("item", "- LEMS: Low Entropy Model Specification", True),
    ("prose", "For more information on LEMS, see Cannon et al. (2014).", False),  # uses it, does not spell it out
    ("list", "- LEMS (Low Entropy Model Specification)\n- NeuroML", False),  # a whole list is not the point
])
def test_the_passage_spelling_out_the_acronym_asked_about_fits(kind, text, fits):
    value = bonus(shapes("What does the acronym LEMS stand for?"), kind, text, False)
    block = BLOCK_OTHERWISE if kind == "list" else 0.0
    assert value == pytest.approx(block + (SPELLED_OUT_FOR_ACRONYM if fits else 0.0), abs=1e-12)


@pytest.mark.parametrize("kind, text, fits", [
    ("item", "4. Leave the pot to cool down to room temperature.", False),  # the marker numbers the step
    ("item", "5. Let it ferment for 3-14 days.", True),
    ("list", "1. Mix the flour and the water.\n2. Cover the bowl.", False),
    ("list", "1. Mix the flour and the water.\n2. Let it rise for two hours.", True),
])
def test_a_numbered_steps_marker_is_no_number(kind, text, fits):
    value = bonus(shapes("How long should the dough rise?"), kind, text, False)
    block = BLOCK_OTHERWISE if kind == "list" else 0.0  # a whole list is rarely the point of "how long"
    assert value == pytest.approx(block + (NUMBER_FOR_HOW_MANY if fits else 0.0), abs=1e-12)


def test_the_step_stating_a_quantity_answers_how_long_not_a_step_numbered_higher():
    # Every step of a numbered method starts with a number; the one saying how long the
    # hummus keeps ("up to one week") is what "how long" asks for.
    method = (
        "1. Drain the chickpeas and keep the liquid from the can for later use.\n"
        "2. Blend the tahini and the lemon juice for one minute until the mixture is thick.\n"
        "3. Add the olive oil, the garlic and the cumin, and blend for another thirty seconds.\n"
        "4. Add the chickpeas and process until the hummus is thick and quite smooth.\n"
        "5. Serve immediately or transfer to an airtight container and store in the fridge for up to one week."
    )
    assert answer("How long does homemade hummus keep in the fridge?", source(1, method, ["Hummus", "Directions"])) == (
        "5. Serve immediately or transfer to an airtight container and store in the fridge for up to one week. [1]"
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




def _scored(chunk, start, text, score, found):
    passage = Passage(chunk, start, start, "prose", text)
    passage.score, passage.cosine, passage.found = score, 0.6, set(found)
    return passage


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
    composer = Composer(embeddings.embed_query(question), [], question)
    chunk = Chunk(1, 0, 0.5, "CF conventions", [])
    idf = dict.fromkeys(composer.wanted, 1.0)
    best = _scored(chunk, 0, "CF attributes are decoded as coordinates by xarray.", 1.0, composer.wanted)
    listed = _scored(chunk, 1, "A few are parsed:\n\n- `coordinates`\n- `bounds`", 1.0 - WIDE_TIE + 0.02, {"attribut"})
    listed.kind = "list"
    assert composer._second(best, [listed], idf, sum(idf.values())) is listed
    # Prose adding nothing stays out; so does a list when the best passage is one.
    listed.kind = "prose"
    assert composer._second(best, [listed], idf, sum(idf.values())) is None
    listed.kind = best.kind = "list"
    assert composer._second(best, [listed], idf, sum(idf.values())) is None


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
    composer = Composer(embeddings.embed_query(question), [], question)
    chunk = Chunk(1, 0, 0.5, "Combining data > Concatenate", [])
    idf = dict.fromkeys(composer.wanted, 1.0)
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


def test_words_of_any_script_are_question_terms_and_a_plural_matches_its_singular():
    assert terms("Which cheese goes into a crêpe with Gruyère?") == {"chees", "goes", "crêp", "gruyèr"}
    assert matches(terms("crêpe gruyère file"), "Cook the crêpes with Gruyère; see the files.") == {
        "crêp", "gruyèr", "file"}
    assert terms("store stores stored storing") == {"stor"}


def test_the_parts_of_an_identifier_in_a_passage_match_question_terms():
    # A settings row names "the LLM backend" only as KLEA_LLM_BACKEND; the question's own
    # identifier stays one term (it is not counted three times).
    assert matches(terms("Which setting selects the LLM backend?"),
                   "| `KLEA_LLM_BACKEND` | `extractive` | which backend answers |") == {"llm", "backend"}
    assert terms("What does extract_bibliography do?") == {"extract_bibliography"}




def test_a_term_is_found_at_the_start_of_a_longer_word_a_short_one_only_before_a_digit():
    assert matches({"add", "own", "pdf", "api", "izhikevich", "install"},
                   "Set the contact address of the owner; izhikevich2007_network reads pdf2 after the installation.") == {
        "izhikevich", "install", "pdf"}
    # "How do I add my own PDFs?": the Crossref contact address holds neither "add" nor
    # "own", so the settings row naming it is no candidate answer.
    assert matches(terms("How do I add my own PDFs?"),
                   "| `KLEA_INGEST_MAILTO` | empty | contact address for the Crossref polite pool |") == set()


LEVELS_LEAD = (
    "The Foo format has been stable since 2011.\n\n"
    "There are three levels of compliance to the Foo specification:"
)
LEVELS_LIST = "- Level 1: metadata only\n- Level 2: morphology\n- Level 3: whole networks"


def _document(*texts: str) -> list[int]:
    from domains.models import Chunk as StoredChunk, Document, Domain, Store

    domain = Domain.objects.create(name="colon", description="colon")
    store = Store.objects.create(name="colon-store", domain=domain)
    document = Document.objects.create(store=store, file_name="foo.md")
    return [StoredChunk.objects.create(store=store, document=document, ordinal=n, text=text).id
            for n, text in enumerate(texts)]


def _answer_with_ids(question: str, chunk_id: int, text: str) -> tuple[str, list]:
    from types import SimpleNamespace

    from asgiref.sync import async_to_sync

    from domains.models import Chunk as StoredChunk

    document_id = StoredChunk.objects.get(id=chunk_id).document_id  # a stored chunk names its document
    chunk = SimpleNamespace(text=text, headings=["Foo", "Compliance"], score=0.5, chunk_id=chunk_id,
                            document_id=document_id)
    sources = [SimpleNamespace(number=1, file_name="foo.md", chunks=[chunk])]
    composer = Composer(embeddings.embed_query(question), sources, question)
    cited: list = []

    def cite(number, quoted=(), passages=()):
        cited.append(list(quoted))
        return f"[{number}]"

    async def collect():
        return "".join([piece async for piece in composer.pieces(cite)])

    return async_to_sync(collect)(), cited


@pytest.mark.django_db
def test_a_lead_in_ending_its_chunk_is_quoted_with_the_block_opening_the_next_chunk():
    # The colon's list is the first block of the document's next chunk: quoted with it,
    # both chunks cited under one marker.
    first, second = _document(LEVELS_LEAD, f"{LEVELS_LIST}\n\nAny level 1 file is also a level 2 file.")
    text, cited = _answer_with_ids("How many levels of compliance does Foo define?", first, LEVELS_LEAD)
    assert text == (
        "There are three levels of compliance to the Foo specification:\n\n"
        "- Level 1: metadata only\n- Level 2: morphology\n- Level 3: whole networks [1]"
    )
    assert cited == [[first, second]]


@pytest.mark.django_db
def test_a_lead_in_ending_its_chunk_stays_out_when_the_next_chunk_opens_with_prose():
    # Nothing it introduces follows: the colon would hang, so the other sentence answers.
    first, _ = _document(LEVELS_LEAD, "Any level 1 file is also a level 2 file.")
    text, cited = _answer_with_ids("How many levels of compliance does Foo define?", first, LEVELS_LEAD)
    assert text == "The Foo format has been stable since 2011. [1]"
    assert cited == [[first]]


TIDY = (
    "Tidy data is a standard way of mapping the meaning of a dataset to its structure. A dataset is messy or tidy "
    "depending on how rows, columns and tables are matched up with observations, variables and types. In tidy data:\n\n"
    "1. Each variable forms a column.\n2. Each observation forms a row.\n3. Each type of observational unit forms a table.\n\n"
    "This is Codd's 3rd normal form (Codd 1990), but with the constraints framed in statistical language, and the focus "
    "put on a single dataset rather than the many connected datasets common in relational databases. Messy data is any "
    "other arrangement of the data."
)


def test_a_list_of_as_many_items_as_the_question_counts_is_quoted_with_its_lead_in():
    assert "count:3" in shapes("What are the three rules of tidy data?")
    assert not any(s.startswith("count:") for s in shapes("What are three-dimensional arrays?"))
    # The list is "the three rules", in none of the question's words; a sentence with the
    # word "rule" is not (a PDF's "rule of thumb" scored above it).
    rule = ("A general rule of thumb is that it is easier to describe functional relationships between variables "
            "than between rows.")
    assert answer("What are the three rules of tidy data?", source(1, rule, ["2. Tidy data", "2.2. Data semantics"]),
                  source(2, TIDY, ["2. Tidy data", "2.3. Tidy data"])) == (
        "In tidy data:\n\n1. Each variable forms a column.\n2. Each observation forms a row.\n"
        "3. Each type of observational unit forms a table. [2]"
    )


def test_the_documents_title_line_is_never_the_answer():
    """A scanned paper's title (not recognised as one: OCR has no font sizes to tell) holds
    every word of a question about its subject; the answer is in its body."""
    title = "Hydrogen incorporation in a-Si:H - growth studies on an Expanding Thermal Plasma"
    text = (
        f"{title}\n\nR.J. Severens, F. van de Pas, J. Bastiaanssen, W.M.M. Kessels\n\n"
        "In order to understand the possible contribution of the flux of atomic hydrogen towards the substrate, "
        "a number of isotope studies have been carried out. From this we can conclude that by far the dominant "
        "part of the hydrogen remaining in the film originates from the silane radical but that there still is a "
        "contribution from the atomic hydrogen in the plasma."
    )
    paper = source(1, text, file_name="severens_asih_scan.pdf")
    question = "How is hydrogen incorporated in a-Si:H films grown by expanding thermal plasma?"
    assert answer(question, paper) == f"{title} [1]"  # no title known: the line that matches most
    paper.metadata = {"title": "Hydrogen incorporation in a-Si:H: growth studies on an expanding thermal plasma."}
    assert answer(question, paper) == (
        "From this we can conclude that by far the dominant part of the hydrogen remaining in the film originates from "
        "the silane radical but that there still is a contribution from the atomic hydrogen in the plasma. [1]"
    )


FRONT_MATTER = "Authors: Quill editor developers\nDate: March 3, 2019"


@pytest.mark.parametrize("question, expected", [
    # The field's label says what it holds: the date answers "when", the authors "who"
    # (MiniLM alone ranks the authors' line first: its value repeats the question's words).
    ("When was the Quill editor plan written?", "Date: March 3, 2019 [1]"),
    ("Who wrote the Quill editor plan?", "Authors: Quill editor developers [1]"),
])
def test_a_field_line_answers_by_its_label(question, expected):
    assert answer(question, source(1, FRONT_MATTER, ["Quill editor plan"])) == expected


@pytest.mark.parametrize("text, expected", [
    ("Date: March 3, 2019", "year"),
    ("**Published**: 2019", "year"),
    ("Authors: Quill editor developers", "name"),
    ("Zarr V2 Format: Quill uses an attribute.", ""),  # a label, but of no field kind
    ("The date was set in March: late, as always.", ""),  # prose, not a field
])
def test_the_kind_of_value_a_field_line_holds(text, expected):
    assert field(text) == expected


@pytest.mark.django_db
def test_a_lead_in_ending_its_chunk_in_a_dangling_word_is_quoted_with_the_next_chunks_block():
    # No colon, but "which are" introduces what follows as surely: the list opening the
    # next chunk is quoted with it, under one marker for both chunks.
    lead = "The Foo format has been stable since 2011.\n\nThe Foo specification has three levels of compliance, which are"
    first, second = _document(lead, f"{LEVELS_LIST}\n\nAny level 1 file is also a level 2 file.")
    text, cited = _answer_with_ids("How many levels of compliance does Foo define?", first, lead)
    assert text == (
        "The Foo specification has three levels of compliance, which are\n\n"
        "- Level 1: metadata only\n- Level 2: morphology\n- Level 3: whole networks [1]"
    )
    assert cited == [[first, second]]


EXTRAS = (
    "If you use pip to install Quill, optional dependencies can be installed by naming extras.\n\n"
    "Other dependency sets cover parts of its functionality:\n\n```\n"
    '$ python -m pip install "quill[io]"        # Install optional dependencies for file formats\n'
    '$ python -m pip install "quill[complete]"  # Install every optional dependency\n```'
)


def test_a_question_asking_for_a_name_written_in_code_gets_the_code_block():
    # "Which pip extra ..." asks for what only the code names; the prose about extras
    # names none, so the block follows it (it used to be left out, as code is to "what is").
    assert answer("Which pip extra installs every optional dependency of Quill?",
                  source(1, EXTRAS, ["Installation", "Extras"])) == (
        "If you use pip to install Quill, optional dependencies can be installed by naming extras.\n\n"
        "Other dependency sets cover parts of its functionality [1]:\n\n```\n"
        '$ python -m pip install "quill[io]"        # Install optional dependencies for file formats\n'
        '$ python -m pip install "quill[complete]"  # Install every optional dependency\n```'
    )


@pytest.mark.parametrize("question, expected", [
    ("Which pip extra installs every optional dependency?", {"code name"}),
    ("What option turns the cache off?", {"code name"}),
    ("Which argument of open_dataset controls decoding?", {"code name"}),
    ("What function joins datasets?", {"code name"}),
    ("Which options are there?", {"listing"}),  # what is there, not a name to type
])
def test_questions_asking_for_a_name_written_in_code(question, expected):
    assert set(shapes(question)) == expected


SIMULATOR = (
    "Quokka is the Quick Object Kinetics Kernel. It is the numerical core of large models of cell signalling "
    "and electrical activity. It is built on a rewrite of the Wallaby 3 solver. Models in other formats are "
    "converted on import."
)


def test_a_short_sentence_carries_on_with_the_sentences_leaning_on_it():
    # "It is the numerical core ..." and "It is built on ..." go on describing Quokka: the
    # passage is not cut before the last of them; "Models in other formats" is another subject.
    chunk = Chunk(1, 0, 0.9, "Quokka", units_of(SIMULATOR))
    first = Passage(chunk, 0, 0, "prose", chunk.units[0].text)
    wanted = terms("What is Quokka built on?")
    assert extend(first, wanted, {t: 1.0 for t in wanted}).text == (
        "Quokka is the Quick Object Kinetics Kernel. It is the numerical core of large models of cell signalling "
        "and electrical activity. It is built on a rewrite of the Wallaby 3 solver."
    )


def test_a_long_sentence_carries_on_only_with_a_sentence_leaning_on_it():
    text = (
        "The converter reads every file of the folder, keeps the headings of each page and writes one chunk per "
        "section of at most four hundred and fifty tokens. It also keeps the tables whole. The web page lists them."
    )
    chunk = Chunk(1, 0, 0.9, "Converter", units_of(text))
    first = Passage(chunk, 0, 0, "prose", chunk.units[0].text)
    assert extend(first, {"converter"}, {"converter": 1.0}).text == (
        "The converter reads every file of the folder, keeps the headings of each page and writes one chunk per "
        "section of at most four hundred and fifty tokens. It also keeps the tables whole."
    )


def test_a_line_of_underscores_is_read_in_linear_time():
    # A form's blank (a line of 200,000 underscores) before the bounded emphasis marks of a
    # glossary label: each start tried every split of the run (4,000 underscores took seconds).
    blank = "_" * 200_000
    units = units_of(f"Name: Ada\n{blank}\n**Date**: 2021\n{blank}: x")
    assert [(unit.text, unit.paragraph) for unit in units] == [
        ("Name: Ada", 0), (blank, 0), ("**Date**: 2021", 1), (f"{blank}: x", 1)]

SOCIALS = (
    "Quill is active on several social media platforms. We use these platforms to share updates.\n\n"
    "- Mastodon\n- Bluesky\n\n"
    "Quill has a mailing list too."
)


def test_a_short_list_no_lead_in_introduces_is_quoted_with_the_paragraph_before_it():
    # The paragraph speaks of the platforms, the list under it names them.
    assert answer("Which social media is Quill on?", source(1, SOCIALS, ["Social media"])) == (
        "Quill is active on several social media platforms. We use these platforms to share updates.\n\n"
        "- Mastodon\n- Bluesky [1]"
    )


def test_a_long_list_after_a_paragraph_is_not_added_to_it():
    items = "\n".join(f"- Platform number {n} with a rather long name and a description" for n in range(1, 5))
    chunk = Chunk(1, 0, 0.9, "Social media", units_of(f"Quill is active on several social media platforms.\n\n{items}"))
    first = Passage(chunk, 0, 0, "prose", chunk.units[0].text)
    assert len(items) > SHORT_LIST
    assert with_list(first) is first


@pytest.mark.django_db
def test_a_chunk_cut_inside_a_sentence_is_never_quoted_from_the_cut():
    """A long paragraph split between two chunks: the second chunk's first sentence is the
    end of one begun in the first; quoted alone it started mid-quotation (new-user trial)."""
    cut = ("A question that names a paper reaches its domain through the document whose metadata best holds "
           'the question\'s naming words (the field words "author", "published", "year", "paper" ... left out; '
           "the stores' documents whose line holds a question word, found through an index of their lexemes): "
           "that share raises the lexical evidence, and the cosine of the question to the document's reference "
           'line the dense evidence, so "In what year was')
    assert len(cut) >= CUT_CHARS
    rest = ('Dijkstra\'s Solution of a Problem in Concurrent Programming Control published?" reaches the papers '
            "domain though its chunks print neither the year nor the full title. The author of a paper is read "
            "from its metadata, never from its chunks.")
    first, second = _document(cut, rest)
    text, cited = _answer_with_ids("Who wrote Solution of a Problem in Concurrent Programming Control?", second, rest)
    assert (text, cited) == ("", [])  # nothing else answers: no source does
    # The same chunk after a paragraph that ends its sentence, or after a short line without
    # a full stop (no cut: "More details to follow"), opens with a sentence of its own.
    from domains.models import Chunk as StoredChunk

    for before in (f"{cut} Dijkstra.", "More details to follow"):
        StoredChunk.objects.filter(id=first).update(text=before)
        text, _ = _answer_with_ids("Who wrote Solution of a Problem in Concurrent Programming Control?", second, rest)
        assert text == f"{rest.split(' The author')[0]} [1]"


def test_a_paragraph_resumed_in_lower_case_is_never_quoted_from_its_start():
    # A PDF sentence resumed after a figure's caption: "propagation time, the events ..."
    # began before the figure, elsewhere.
    text = ("FIG. 1. The gravitational-wave event GW150914 observed by the LIGO Hanford and Livingston detectors.\n\n"
            "propagation time, the events have a combined signal-to-noise ratio (SNR) of 24 [45].\n\n"
            "Only the LIGO detectors were observing at the time of GW150914.")
    result = answer("What is the signal-to-noise ratio of GW150914?", source(1, text, [], file_name="ligo.pdf"))
    assert result == "The gravitational-wave event GW150914 observed by the LIGO Hanford and Livingston detectors. [1]"

"""The extractive backend's answers: passages quoted whole from Markdown chunk text (a
list with its lead-in, a table with its header, a code block whole or not at all, never a
colon left hanging). Its routing and model runs on a real store: test_extractive_routing.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync

from chat.backends import get_backend
from chat.backends.extractive.candidates import CODE_CHARS, Passage
from chat.backends.extractive.passages import Composer, with_marker
from chat.backends.extractive.shapes import as_question, is_generic, shapes
from chat.backends.extractive.text import Block as TextBlock
from chat.backends.extractive.text import leads_on, list_items, segment
from domains import embeddings
from ingestion.chunk.chunker import chunk_blocks
from ingestion.convert.base import Block

from .extractive_helpers import answer, source

POLICY = (
    "Xarray adopts a rolling policy regarding the minimum supported version of its dependencies:\n\n"
    "- **Python:** 30 months\n- **numpy:** 18 months\n- **all other libraries:** 12 months"
)
TABLE = (
    "| variable | default | meaning |\n| --- | --- | --- |\n"
    "| `KLEA_CHUNK_MAX_TOKENS` | `450` | chunk size budget, heading chain included |\n"
    "| `KLEA_BM25_K1`, `KLEA_BM25_B` | `1.2`, `0.75` | BM25 parameters |\n"
    "| `KLEA_LLM_TIMEOUT` | `120` | seconds without a byte from the model server before a timeout error |\n"
    "| `KLEA_MCP_MAX_CALLS` | `4` | MCP tool calls per question; further calls are rejected |\n"
    "| `KLEA_MAX_REFS_SIZE` | `20000` | reference-material budget in characters |\n"
    "| `KLEA_WS_MAX_FRAME_BYTES` | `65536` | largest websocket frame the chat accepts |\n"
    "| `KLEA_HEALTH_TIMEOUT` | `2` | seconds /health waits for Redis and for the model server, each |\n"
    "| `KLEA_CONVERT_TIMEOUT` | `1800` | seconds a single file may take to convert |"
)
INSTALL = (
    "Klea runs on any machine with Python 3.11; the embedded database needs no setup.\n\n"
    "To install pyNeuroML, use pip:\n\n```\npip install pyneuroml\n```\n\n"
    "The package brings the jnml command line tool as well."
)


def test_a_list_is_quoted_whole_with_its_lead_in():
    text = f"The policy was adopted in 2020 after a long discussion.\n\n{POLICY}"
    assert answer("Which minimum versions of its dependencies does xarray support?",
                  source(1, text, ["Installation", "Minimum dependency versions"])) == f"{POLICY} [1]"


def test_a_colon_is_never_left_hanging():
    # The sentence ending in ":" closes the chunk: what it introduced is elsewhere.
    text = ("Xarray follows NEP 29 for its Python and numpy versions. "
            "Xarray adopts a rolling policy regarding the minimum supported version of its dependencies:")
    result = answer("What is xarray's policy for the minimum supported versions of dependencies?",
                    source(1, text, ["Minimum dependency versions"]))
    assert result == "Xarray follows NEP 29 for its Python and numpy versions. [1]"


def test_a_fragment_is_quoted_with_what_it_introduces_or_not_at_all():
    # "..., which provides" ends its paragraph; the names it introduces are the next one.
    text = ("Each source of examples is called a strategy.\n\n"
            "These strategies are accessible in the xarray.testing.strategies module, which provides\n\n"
            "testing.strategies.names, testing.strategies.attrs, testing.strategies.variables")
    result = answer("Which strategies does the xarray.testing.strategies module provide?",
                    source(1, text, ["Testing", "Strategies"]))
    assert result == (
        "These strategies are accessible in the xarray.testing.strategies module, which provides\n\n"
        "testing.strategies.names, testing.strategies.attrs, testing.strategies.variables [1]"
    )
    # Closing the chunk, with nothing after it, the fragment is never quoted.
    cut = text.rsplit("\n\n", 1)[0]
    assert answer("Which strategies does the xarray.testing.strategies module provide?",
                  source(1, cut, ["Testing", "Strategies"])) == "Each source of examples is called a strategy. [1]"


@pytest.mark.parametrize("sentence, expected", [
    ("Xarray adopts a rolling policy regarding its dependencies:", True),
    ("These strategies are accessible in the strategies module, which provides", True),
    ("The main formats are described in the table below", True),
    ("Common examples include", True),
    ("A spice mixture for most Indian dishes", False),
    ("Authors: Xarray developers", False),
    ("The release was tested on Windows.", False),
    ("Use `is`", False),
    ("Only behind a reverse proxy, with the settings below; never expose its port.", True),
    ("Set these as follows, then restart the server.", True),
    ("The water stays liquid below 0 °C when salted.", False),
    ("OCR is described in [OCR](#ocr) below, with its settings.", False),
    ("Table 1: Who cleans", True),  # a caption: quoted only with its table
    ("Table IV. Results of the second trial", True),
    ("The table shows who cleans.", False),
])
def test_leads_on(sentence, expected):
    assert leads_on(sentence) is expected


def test_a_tables_caption_is_quoted_with_its_table_never_alone():
    # A new-user trial's rota: the caption shares the question's words, the table holds the answer.
    rota = ("Table 1: Who cleans\n\n| name | Monday | Tuesday |\n| --- | --- | --- |\n"
            "| Ann | sink | floor |\n| Bo | bins | hall |")
    assert answer("Who cleans the floor on Tuesday?", source(1, rota, ["Rota"])) == (
        "Table 1: Who cleans\n\n| name | Monday | Tuesday |\n| --- | --- | --- |\n"
        "| Ann | sink | floor |\n| Bo | bins | hall |\n\n[1]"
    )


def test_a_table_row_is_never_quoted_without_its_header():
    result = answer("What is the default chunk size in tokens?", source(1, TABLE, ["Configuration"]))
    assert result == (
        "| variable | default | meaning |\n| --- | --- | --- |\n"
        "| `KLEA_CHUNK_MAX_TOKENS` | `450` | chunk size budget, heading chain included |\n\n[1]"
    )


def test_how_do_i_gets_the_code_block_whole():
    result = answer("How do I install pyNeuroML?", source(1, INSTALL, ["Installing pyNeuroML"]))
    assert result == "To install pyNeuroML, use pip [1]:\n\n```\npip install pyneuroml\n```"


def test_a_code_block_too_long_to_quote_is_left_out():
    long_code = "```\n" + "\n".join(f"pip install package_{i}" for i in range(CODE_CHARS // 20)) + "\n```"
    text = f"To install pyNeuroML, use pip with the requirements of your project.\n\n{long_code}"
    result = answer("How do I install pyNeuroML?", source(1, text, ["Installing pyNeuroML"]))
    assert result == "To install pyNeuroML, use pip with the requirements of your project. [1]"


def test_the_chunk_whose_heading_matches_speaks():
    other = source(1, "The simulator reads the model and runs it for the given duration.", ["Running a simulation"],
                   score=0.6)
    right = source(2, "Use the -nogui option to run without opening a window.", ["Running jnml without a GUI"],
                   score=0.5)
    assert answer("How do I run jnml without a GUI?", other, right) == (
        "Use the -nogui option to run without opening a window. [2]"
    )


def test_nothing_is_said_when_no_passage_answers():
    assert answer("What is the capital of Australia?", source(1, INSTALL, ["Installing pyNeuroML"])) == ""


def test_markdown_chunk_text_keeps_fences_tables_and_lists():
    blocks = [
        Block(("Install",), "To install it, run:"),
        Block(("Install",), "pip install pyneuroml", "code"),
        Block(("Install",), "Tool | Language\njnml | Java\npynml | Python", "table"),
        Block(("Install",), "- one\n- two", "list"),
    ]
    [chunk] = chunk_blocks(blocks, embeddings.count_tokens)
    assert chunk.text == (
        "To install it, run:\n\n```\npip install pyneuroml\n```\n\n"
        "| Tool | Language |\n| --- | --- |\n| jnml | Java |\n| pynml | Python |\n\n- one\n- two"
    )


def test_split_code_and_tables_keep_their_frame():
    blocks = [
        Block(("A",), "\n".join(f"x_{i} = compute({i})" for i in range(60)), "code"),
        Block(("B",), "name | value\n" + "\n".join(f"row{i} | {i}" for i in range(80)), "table"),
    ]
    chunks = chunk_blocks(blocks, embeddings.count_tokens, max_tokens=64)
    assert len(chunks) > 4
    for chunk in chunks:
        if chunk.headings == ("A",):
            assert chunk.text.startswith("```\n") and chunk.text.endswith("\n```")
        else:
            assert chunk.text.startswith("| name | value |\n| --- | --- |\n| row")


@pytest.mark.parametrize("question, generic", [
    ("What is this?", True),
    ("What does this project do?", True),
    ("How do I get started with this tool?", True),
    ("What is the capital of France?", False),
    ("What does this function return?", False),
    ("How are you?", False),
    ("What is a domain?", False),  # a term to define, not the domain at hand
    ("What is an app?", False),
    ("What is this domain about?", True),
])
def test_generic_questions(question, generic):
    assert is_generic(question) is generic


@pytest.mark.parametrize("request_, question", [
    ("Give me the ingredients for hummus", "What are the ingredients for hummus"),
    ("Can you show me the table of protocol error codes?", "What is the table of protocol error codes?"),
    ("Please list the three rules of tidy data", "What are the three rules of tidy data"),
    ("Name the authors of the Raft paper", "What are the authors of the Raft paper"),
    ("Tell me how to install pyNeuroML", "how to install pyNeuroML"),
    ("Tell me about Raft", "What is Raft"),
    ("Listing options is slow", "Listing options is slow"),  # not a request
])
def test_a_request_is_read_as_its_question(request_, question):
    assert as_question(request_) == question


def test_a_request_has_its_questions_shapes():
    assert shapes("Give me the ingredients for hummus") == shapes("What are the ingredients for hummus?") == {
        "listing", "definition:ingredients"}
    assert shapes("Show me how to install pyNeuroML") == shapes("How to install pyNeuroML?") == {"howto"}


HUMMUS = (
    "- One can of garbanzo beans (chickpeas)\n- 1/2 teaspoon baking soda\n- 1/2 cup of tahini (also known as tehina)\n"
    "- 1/4 cup (or more, to taste) of lemon juice, fresh preferred - this is about 1 1/2 to 2 lemons' worth\n"
    "- 1 (or 2) clove(s) of garlic, roughly chopped (fresh or frozen pre-chopped is fine, but not dry)\n"
    "- 1/4 teaspoon cumin, ground (if you have whole, toast in a dry pan until fragrant before grinding)\n"
    "- 1/4 teaspoon za'atar (optional, if you can find it)\n- 1 Tablespoon of olive oil, plus more for serving\n"
    "- Fresh parsley (optional for serving)"
)
GUACAMOLE = "- 3 ripe avocados\n- 1 lime, juiced\n- 1/2 onion, diced\n- 1 teaspoon salt"


@pytest.mark.parametrize("question", [
    "Give me the ingredients for hummus",
    "What ingredients do I need for hummus?",
    "Can you list the ingredients for hummus?",
])
def test_a_request_gets_the_whole_list_as_the_question_does(question):
    # The list is long enough to be quoted item by item (a step of a method); asked for
    # as a list, it is quoted whole.
    assert answer(question, source(1, HUMMUS, ["Hummus", "Ingredients"], score=0.6, file_name="hummus.md"),
                  source(2, GUACAMOLE, ["Guacamole", "Ingredients"], file_name="guacamole.md")) == f"{HUMMUS} [1]"


QUOTING = (
    "With the Python client:\n\n```python\nreply = client.chat.completions.create(\n"
    "    model=\"klea/klea-docs\",\n"
    "    messages=[{\"role\": \"user\", \"content\": \"How do I point Klea at my own PostgreSQL?\"}],\n)\n```"
)
ANSWERING = ("To have Klea use your own PostgreSQL server instead of the embedded one, "
             "set DATABASE_URL=postgres://user:pass@host:5432/klea before migrating.")


def test_code_that_merely_quotes_the_question_does_not_answer_it():
    # The question's words inside a string literal are an example input, not evidence.
    result = answer("How do I point Klea at my own PostgreSQL?",
                    source(1, QUOTING, ["Python clients"], score=0.7, file_name="clients.md"),
                    source(2, ANSWERING, ["Using an existing PostgreSQL"], score=0.5, file_name="configuration.md"))
    assert result == f"{ANSWERING} [2]"


MENTIONING = ('One answer changed: "How do I point Klea at my own PostgreSQL?" no longer quotes '
              'the code line; it is still wrong, because retrieval misses the configuration page.')


def test_prose_that_quotes_the_question_does_not_answer_it():
    # A write-up quoting the question (“…?” or "…?") mentions it; the answer states it.
    for mentioning in (MENTIONING, MENTIONING.replace('"How', "“How").replace('?"', "?”")):
        result = answer("How do I point Klea at my own PostgreSQL?",
                        source(1, mentioning, ["Benchmarks"], score=0.7, file_name="benchmarks.md"),
                        source(2, ANSWERING, ["Using an existing PostgreSQL"], score=0.5, file_name="configuration.md"))
        assert result == f"{ANSWERING} [2]"


def test_a_list_after_a_sentence_is_never_glued_into_prose():
    # No blank line between the sentence and the list: the items are still a list.
    text = ("Send it as an Authorization: Bearer header with every request.\n"
            "- from a script: manage.py apitoken create alice\n- from the browser: the API tokens page")
    result = answer("How do I send an API token with a request?", source(1, text, ["API tokens"]))
    assert result == (
        "Send it as an Authorization: Bearer header with every request.\n\n"
        "- from a script: manage.py apitoken create alice\n- from the browser: the API tokens page [1]"
    )


def test_table_rows_and_list_items_are_their_own_blocks_without_a_blank_line():
    text = "Outcomes:\n| input | result |\n| --- | --- |\n| scanned PDF | needs_ocr |\nSee above.\n- one\n- two"
    assert segment(text) == [
        TextBlock("text", "Outcomes:"),
        TextBlock("table", "| input | result |\n| --- | --- |\n| scanned PDF | needs_ocr |"),
        TextBlock("text", "See above."),
        TextBlock("list", "- one\n- two"),
    ]


def test_list_items_split_at_the_outer_markers():
    text = "- Spices:\n    - 1 teaspoon cinnamon\n    - 1/4 teaspoon nutmeg\n- Flour, 2 cups\n  sifted"
    assert list_items(text) == [
        "- Spices:\n    - 1 teaspoon cinnamon\n    - 1/4 teaspoon nutmeg",
        "- Flour, 2 cups\n  sifted",
    ]


@pytest.mark.django_db  # the backend reads the chunks' neighbours (none here: not stored)
def test_the_citation_names_the_chunk_it_quotes_not_the_sources_first():
    # The paper's first chunk (its affiliations) ranks first; the proof is in its fourth
    # page's chunk: the marker [1] must open that one (the reference's "quoted").
    from chat.answers.compose import Composition
    from chat.answers.material import Material
    from chat.pipeline.references import reference_list
    from domains.retrieval import Source
    from domains.retrieval.types import RetrievedChunk

    def chunk(chunk_id, text, headings, score):
        return RetrievedChunk(chunk_id, text, headings, {}, "flp.pdf", 7, "papers", "papers", score=score,
                              provenance={"pages": [chunk_id % 10, chunk_id % 10]})

    paper = Source(1, "papers", "papers", "flp.pdf", 7, chunks=[
        chunk(201, "Michael J. Fischer, Yale University. Nancy A. Lynch, MIT. Michael S. Paterson, University "
                   "of Warwick.", ["Impossibility of distributed consensus with one faulty process"], 0.9),
        chunk(204, "No consensus protocol is totally correct in spite of one fault. The proof is by "
                   "contradiction on the configurations of the protocol.", ["3 The main result"], 0.6),
    ])
    question = "Can a consensus protocol be totally correct in spite of one fault?"
    vector = embeddings.embed_query(question)

    async def vector_of():
        return vector

    composition = Composition(get_backend("extractive"), question, Material("", [paper]), [], vector=vector_of)

    async def collect():
        return "".join([piece async for piece in composition.pieces()])

    text = async_to_sync(collect)()
    assert text == ("No consensus protocol is totally correct in spite of one fault. The proof is by "
                    "contradiction on the configurations of the protocol. [1]")
    assert composition.cleaner.quoted == {1: [204]}
    (item,) = reference_list(composition.cited)
    assert (item["quoted"], [c["chunk_id"] for c in item["chunks"]]) == ([204], [201, 204])
    # The reference names the pages of the quoted passage, not p. 1-4 over every chunk.
    assert item["pages"] == [4, 4]
    assert paper.quoted == []  # the material's own source is left as it was


def test_prose_runs_on_only_after_a_full_stop():
    composer = Composer(embeddings.embed_query("roadmap"), [], "roadmap")
    chunk = SimpleNamespace(number=1, chunk_id=None)
    composer.choose = lambda: [Passage(chunk, 0, 0, "prose", "Authors: Xarray developers"),
                               Passage(chunk, 1, 1, "prose", "Date: September 7, 2021"),
                               Passage(chunk, 2, 2, "prose", "The roadmap was written in 2021.")]

    async def collect():
        return "".join([piece async for piece in composer.pieces(lambda n, quoted=(), passages=(): f"[{n}]")])

    assert async_to_sync(collect)() == (
        "Authors: Xarray developers\n\nDate: September 7, 2021\n\nThe roadmap was written in 2021. [1]"
    )


@pytest.mark.parametrize("text, expected", [
    ("Firing rates doubled.", "Firing rates doubled. [1]"),
    ("Steps:\n\n- one\n- two", "Steps:\n\n- one\n- two [1]"),
    # A table's marker is never inside a cell (it would read as the value) nor on the
    # line under the table (Markdown reads that as one more row).
    ("| a | b |\n| --- | --- |\n| 1 | 2 |\n", "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n[1]"),
    ("| a | b\n| --- | ---\n| 1 | 2", "| a | b\n| --- | ---\n| 1 | 2\n\n[1]"),  # rows without a closing pipe
    ("The defaults:\n\n| a | b |\n| --- | --- |\n| 1 | 2 |", "The defaults [1]:\n\n| a | b |\n| --- | --- |\n| 1 | 2 |"),
    ("Use pip:\n\n```\npip install x\n```", "Use pip [1]:\n\n```\npip install x\n```"),
    ("```\npip install x\n```", "```\npip install x\n```\n\n[1]"),  # no lead-in to carry it
])
def test_the_marker_reads_as_part_of_the_passage_and_never_inside_a_block(text, expected):
    assert "".join(with_marker(text, "[1]")) == expected


def test_a_sentence_pointing_at_what_follows_is_quoted_only_with_it():
    # "with the settings below" (new-user trial): the settings are the table after the paragraph.
    proxy = ("Only behind a reverse proxy (nginx, Caddy) that terminates TLS, with the settings below; never expose "
             "daphne's own port. Before opening it up, keep the admin to the networks that need it.")
    settings = "| variable | set to |\n| --- | --- |\n| `DJANGO_SECURE_COOKIES` | `true` |"
    question = "How do I run Klea behind nginx with TLS?"
    # not the last sentence of its paragraph: what it points at never follows it
    assert answer(question, source(1, f"{proxy}\n\n{settings}", ["Deployment behind a reverse proxy"])) == ""
    pointing = "Run Klea behind a reverse proxy (nginx, Caddy) that terminates TLS, with the settings below."
    assert answer(question, source(1, f"{pointing}\n\n{settings}", ["Deployment behind a reverse proxy"])) == (
        f"{pointing}\n\n{settings}\n\n[1]")

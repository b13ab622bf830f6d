"""Which passages the extractive backend chooses (issue 13): by the question's shape (a
list for "which ... are" or "what goes into", a number for "how many", one step of a
long method, the label of a field line, a name written in code), how far a passage
carries on. The question's shapes themselves and the words matching its terms:
test_extractive_shapes.py; a second passage after the best one: test_extractive_runner_up.py;
quoting across chunks: test_extractive_chunks.py; how far a passage carries on:
test_extractive_reach.py; passages saying nothing new: test_extractive_says_more.py."""

from __future__ import annotations

import pytest

from chat.backends.extractive.candidates import Chunk, Passage, candidates, headings_of, units_of
from chat.backends.extractive.passages import INSTRUCTION_UNDER_TASK, Composer
from chat.backends.extractive.reach import SHORT_LIST, extend, with_list
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


BREWS = (
    "Primary brew:\n\n"
    "1. Boil two litres of fresh water and steep the black tea in it for ten minutes.\n"
    "2. Strain the leaves from the tea and stir in two cups of sugar until it dissolves.\n"
    "3. Let the tea cool below 40 degrees and pour it into a wide mouthed jar.\n"
    "4. Add the scoby and let the jar sit in a warm dark spot for 10-14 days.\n\n"
    "Second brew:\n\n"
    "1. Strain most of the brew through a sieve into re-sealable glass bottles.\n"
    "2. Add juices, fruits or spices to the bottles if you wish, for flavour.\n"
    "3. Let the bottles sit in a warm dark spot for another 3-14 days, releasing pressure.\n"
    "4. Put the bottles in the fridge once you like the carbonation and the flavour."
)


def test_a_step_of_a_long_list_stands_under_its_lead_in():
    # "Primary brew:" heads its list's steps as a heading would: the step of the primary
    # brew answers first (the like step of the second brew follows, a near tie); without
    # it both whole lists were quoted, under their lead-ins.
    chunk = Chunk(1, 0, 0.5, "Kombucha > Directions", units_of(BREWS))
    items = [p for p in candidates(chunk, terms("primary brew")) if p.kind == "item"]
    assert {headings_of(p) for p in items} == {"Kombucha > Directions\nPrimary brew:",
                                               "Kombucha > Directions\nSecond brew:"}
    assert answer("How long does the primary brew sit?", source(1, BREWS, ["Kombucha", "Directions"])) == (
        "4. Add the scoby and let the jar sit in a warm dark spot for 10-14 days.\n\n"
        "3. Let the bottles sit in a warm dark spot for another 3-14 days, releasing pressure. [1]"
    )


def test_a_short_list_is_quoted_whole_not_one_item():
    text = "- Spaghetti: 320 g\n- Eggs: 5\n- Guanciale (cubed): 150 g\n- Pecorino Romano (grated)"
    assert answer("How much spaghetti and guanciale do I need?", source(1, text, ["Carbonara", "Ingredients"])) == (
        f"{text} [1]"
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


RUN = ("This installs everything into `.venv` (pip shows its progress), starts the embedded PostgreSQL + pgvector "
       "(`var/pgdata`), migrates, ingests this `docs/` folder as the demo domain `klea-docs` (`manage.py prepare`: "
       "these steps in one process, one line per step with its time, each a no-op when up to date) and serves on "
       "http://127.0.0.1:8000 (another port: `make run PORT=8001`; stop the server with Ctrl+C and the database "
       "with `make stop-db`; `make clean-db` deletes the database).")
EXISTING = "```sh\nexport DATABASE_URL=postgres://klea:secret@db.example.org:5432/klea\n.venv/bin/python manage.py migrate\n```"


def test_how_to_is_answered_by_the_instruction_under_the_task_first():
    # The description shares more words with the question (klea, postgresql, server) and
    # scores best; the commands under the section the question names come first.
    question = "How do I point Klea at my own PostgreSQL server?"
    sources = [source(1, RUN, ["Getting started", "Run it"], score=0.95, file_name="getting-started.md"),
               source(2, EXISTING, ["Configuration", "An existing PostgreSQL"], score=0.4, file_name="configuration.md")]
    assert answer(question, *sources) == f"{EXISTING}\n\n[2]\n\n{RUN} [1]"
    composer = Composer(embeddings.embed_query(question), sources, question)
    offered = composer.offered(composer._idf())
    description, instruction = (next(p for p in offered if p.chunk.number == n) for n in (1, 2))
    assert composer.instruction_first([description, instruction]) == [instruction, description]
    assert composer.instruction_first([instruction, description]) == [instruction, description]
    # Not a how-to question: the best passage stays first.
    other = Composer(embeddings.embed_query("Which PostgreSQL server does Klea use?"), sources,
                     "Which PostgreSQL server does Klea use?")
    assert other.instruction_first([description, instruction]) == [description, instruction]


def test_an_instruction_elsewhere_does_not_lead_a_how_to_answer():
    # Commands under a section the question does not name ("Examples") are no reason to reorder.
    question = "How do I point Klea at my own PostgreSQL server?"
    sources = [source(1, RUN, ["Getting started", "Run it"], score=0.95),
               source(2, EXISTING, ["Configuration", "Examples"], score=0.4)]
    composer = Composer(embeddings.embed_query(question), sources, question)
    offered = composer.offered(composer._idf())
    description, instruction = (next(p for p in offered if p.chunk.number == n) for n in (1, 2))
    assert composer.instruction_first([description, instruction]) == [description, instruction]


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


def test_the_step_stating_the_percentage_answers_a_terse_percentage_question():
    # Every step of the method holds a number (1 liter, 20 days); only the last one is a
    # percentage, and it names neither "alcohol" nor "percentage": it is the answer, the
    # first step (adding "alcohol") follows it as the runner-up, and the second, scoring
    # alike, as an item of the same list (test_extractive_runner_up.py), in the method's order;
    # the third, between them, with them: no step of a numbered list is skipped.
    method = (
        "1. Pour the alcohol into a 1 liter mason jar and add the peel of the lemons\n"
        "2. Cover the jar and let the lemons infuse the alcohol for 20 days in a dark place\n"
        "3. Boil the water with the sugar, let the syrup cool, then strain the alcohol into it\n"
        "4. Feel free to adjust the sugar to the sweetness you like, but the ABV should remain around 28-30%"
    )
    assert answer("limoncello alcohol percentage", source(1, method, ["Limoncello", "Directions"])) == (
        "1. Pour the alcohol into a 1 liter mason jar and add the peel of the lemons\n\n"
        "2. Cover the jar and let the lemons infuse the alcohol for 20 days in a dark place\n\n"
        "3. Boil the water with the sugar, let the syrup cool, then strain the alcohol into it\n\n"
        "4. Feel free to adjust the sugar to the sweetness you like, but the ABV should remain around 28-30% [1]"
    )


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


def test_a_sentence_holding_every_word_the_question_asks_about_may_answer_below_the_floor():
    # The clause that answers sits in a parenthesis of a long sentence about installing and
    # serving (its cosine 0.32, under MIN_SIMILARITY); it holds every question term once
    # "other" and "than" are none (Composer.holds_all lets it answer).
    question = "How do I start Klea on a port other than 8000?"
    composer = Composer(embeddings.embed_query(question), [], question)
    assert composer.wanted == {"start", "klea", "port", "8000"}
    text = ("This installs everything into `.venv`, starts the embedded PostgreSQL, ingests this `docs/` folder as "
            "the demo domain `klea-docs` and serves on http://127.0.0.1:8000 (another port: `make run PORT=8001`).")
    passage = Passage(Chunk(1, 0, 0.5, "Getting started > Run it", []), 0, 0, "prose", text)
    passage.found = matches(composer.wanted, text)
    assert composer.holds_all(passage)


FRONT_MATTER = "Authors: Quill editor developers\nDate: March 3, 2019"


@pytest.mark.parametrize("question, expected", [
    # The field's label says what it holds: the date answers "when", the authors "who"
    # (MiniLM alone ranks the authors' line first: its value repeats the question's words).
    ("When was the Quill editor plan written?", "Date: March 3, 2019 [1]"),
    ("Who wrote the Quill editor plan?", "Authors: Quill editor developers [1]"),
])
def test_a_field_line_answers_by_its_label(question, expected):
    assert answer(question, source(1, FRONT_MATTER, ["Quill editor plan"])) == expected


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


UPGRADE = (
    "Upgrading a deployment of several machines:\n\n"
    "1. Stop the workers (queued tasks wait in the broker), then deploy the new code on every machine.\n"
    "2. Run `manage.py migrate` once, from any one machine, while the web processes still serve the old code.\n"
    "3. Run `manage.py prepare_models` on each machine, then start the web processes and the workers again.\n"
    "4. Check the admin's status page on each machine: every worker reports the new version."
)


def test_the_first_step_asked_for_is_the_first_item_of_the_method():
    # The steps share the method's words and score alike; "the first step" is the first
    # item (without its place counting, steps 1, 2 and 4 were quoted together).
    assert answer("What is the first step when upgrading a multi-machine deployment?",
                  source(1, UPGRADE, ["Deployment", "Upgrading"])) == (
        "1. Stop the workers (queued tasks wait in the broker), then deploy the new code on every machine. [1]"
    )


PIZZA_DIRECTIONS = (
    "1. Mix the flour, the yeast and the salt in a bowl.\n2. Mix in the olive oil and the water. No need for kneading!\n"
    "3. Cover the bowl and let the dough sit at room temperature for at least 7 hours.\n"
    "4. The dough keeps in the fridge for some days, so feel free to double the quantities for more pizzas."
)
PIZZA_INGREDIENTS = "- 200g flour\n- 2g instant yeast\n- 5g salt\n- 5g olive oil\n- 140g warm water"


def test_the_recipe_for_x_quotes_its_ingredient_list():
    # The steps share the question's words ("dough", "knead"); the ingredient list shares
    # none, but it is what "the recipe for" asks for first (without it, the steps alone).
    assert answer("What is the recipe for no-knead pizza dough?",
                  source(1, PIZZA_DIRECTIONS, ["No-knead pizza dough", "Directions"], score=0.72),
                  source(1, PIZZA_INGREDIENTS, ["No-knead pizza dough", "Ingredients"], score=0.70)) == (
        f"{PIZZA_DIRECTIONS} [1]\n\n{PIZZA_INGREDIENTS} [1]"
    )


CONSOLIDATED = (
    "You do not need to write consolidated metadata to make Zarr stores readable, but because Quill can open these "
    "stores much faster, users see a warning when reading non-consolidated stores.\n\n"
    "By default Quill uses a feature called consolidated metadata, storing all metadata for the entire dataset with a "
    "single key (by default called `.zmetadata`). This typically drastically speeds up opening the store."
)


def test_what_is_x_and_why_quotes_the_passage_introducing_x_and_the_cause():
    # "a feature called consolidated metadata, storing ..." says what it is; the cause
    # ("because Quill can open these stores much faster") is quoted too: "why" asks for more
    # than a definition. Without the first, only the cause was quoted.
    assert answer("What is consolidated metadata in Zarr and why does it make opening faster?",
                  source(1, CONSOLIDATED, ["Zarr", "Consolidated metadata"])) == f"{' '.join(CONSOLIDATED.split(chr(10) * 2))} [1]"


INGEST_FIGURES = (
    "The corpora of the demo, ingested on one core:\n\n| corpus | files stored | chunks | ingest time |\n"
    "| --- | --- | --- | --- |\n| Quill | 122 | 1,333 | 62 s |\n| Wren | 57 | 1,620 | 107 s |\n| Kestrel | 40 | 410 | 21 s |"
)


def test_the_row_asked_about_is_quoted_under_the_header_of_a_short_table_too():
    # Three rows: the Quill row under the header answers (the whole table was quoted).
    assert answer("How many chunks did the Quill documentation give when ingested?",
                  source(1, INGEST_FIGURES, ["Benchmarks", "Ingest"])) == (
        "| corpus | files stored | chunks | ingest time |\n| --- | --- | --- | --- |\n| Quill | 122 | 1,333 | 62 s |\n\n[1]"
    )

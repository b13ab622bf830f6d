"""The shape of a question (:mod:`chat.backends.extractive.shapes`: a year, a number of a
measure, a list, a name written in code, an acronym spelled out ...), how well a passage's
form fits it (:mod:`chat.backends.extractive.fits`), and which words of a passage match
the question's terms. Which passages are then chosen: test_extractive_choice.py."""

from __future__ import annotations

import pytest

from chat.backends.extractive.fits import (BLOCK_OTHERWISE, CAUSE_FOR_WHY, CODE_FOR_HOWTO, CODE_FOR_WHY,
                                           CODE_OTHERWISE, IMPERATIVE_FOR_HOWTO, INGREDIENTS_FOR_RECIPE,
                                           MEASURE_FOR_HOW_MANY, NAMED_FOR_WHICH, NUMBER_FOR_HOW_MANY,
                                           NO_YEAR_FOR_WHEN, PLACE_FOR_POSITION, POINTING_BACK, SIGN_FOR_DONE,
                                           SPELLED_OUT_FOR_ACRONYM, SUBJECT_FOR_DEFINITION, SUBSTITUTE_FOR_SUBSTITUTE,
                                           VERSION_FOR_VERSION, YEAR_FOR_WHEN, bonus, enumerates, field,
                                           in_place, names_one, of_measure, under_heading)
from chat.backends.extractive.shapes import shapes
from chat.backends.extractive.text import matches, terms


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
    # from each item of a long list with no "and" the items ran to its end (quadratic: minutes)
    ("Ab, " * 50_000 + "end.", False),
    ("Vol. 1, " * 25_000, False),
    ("Ab, " * 50_000 + "Cd and Ef", True),
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
    ("How strong is homemade kvass?", {"number", "measure:percent"}),
    ("limoncello alcohol percentage", {"number", "measure:percent"}),  # terse: the measure named
    ("What ratio of water to vinegar for pickled onions?", {"number"}),
    ("How old is the NeuroML project?", {"number", "measure:time", "year"}),  # an age or when it began
    ("What time span can nanosecond datetimes cover?", {"number", "measure:time"}),  # a range of years, a quantity
    ("How long should the dough rise?", {"number", "measure:time", "measure:length"}),
    ("How many qubits did the experiment use?", {"number", "many:qubit"}),
    ("How many read-only tools are there?", {"number", "many:read", "many:only", "many:tool"}),
    ("At what temperature do I heat the milk?", {"number", "measure:temperature"}),
    ("What range of ports may the server use?", {"number"}),
    ("How do I strengthen the sauce?", {"howto"}),
    ("How do I know when the caramel is dark enough?", {"howto", "sign"}),  # the sign it is done, asked
    ("When is the bread done?", {"sign"}),
    ("Is the custard thick enough once it coats a spoon?", {"sign"}),
    ("How do I know which version is installed?", {"howto", "number", "version"}),  # a version asked for, no sign
    ("java versions", {"listing", "version"}),
    ("What netcdf4-python version writes complex numbers?", {"version"}),  # a name's digits are no version
    ("How will I know the kvass has finished fermenting?", {"sign"}),
    ("How can I check that the chicken is cooked through?", {"howto", "sign"}),
    ("How do I tell the difference between aioli and mayonnaise?", {"howto"}),  # a comparison, no sign
    ("When is a turkey smoked on the charcoal grill done?", {"sign"}),
    ("What changed in version 2 of the schema?", set()),  # about a version it names, not asking for one
    ("Which cheese goes into fondue?", {"listing", "which:cheese"}),  # what a dish holds, asked with a noun
    ("What liquids go into the crêpe batter?", {"listing"}),
    ("Which cheese goes into the sauce at the end?", {"which:cheese"}),  # a step of the method
    ("What does the acronym LEMS stand for?", {"acronym:LEMS"}),  # as written: the form is case-sensitive
    ("What is the first step when upgrading a multi-machine deployment?", {"position:first"}),
    ("I installed it; what is the first thing to do in MATLAB?", {"position:first"}),
    ("Which is the final stage of brewing kombucha?", {"position:last"}),
    ("Which article first introduced the concept of NeuroML?", set()),  # an adverb, no place in a method
    ("What is the recipe for no-knead pizza dough?", {"recipe"}),
    ("What sort of models is the NEST simulator suited for?", {"listing"}),  # as "what kind of"
    ("Which SDK does Klea use to call MCP tools?", {"which:sdk"}),
    ("What pot is fondue cooked in?", {"which:pot"}),
    ("neuroml code of conduct rules", {"listing"}),  # a keyword query naming things in the plural
    ("lenten chili spices", {"listing"}),
    ("rolling window", set()),
    ("git clone fails", set()),  # a final "-s" that is a verb
    ("latest news", set()),
    ("Which status code means the upload was rejected?", set()),  # "status" is one thing
    ("Which HTTPS port does it use?", set()),
    ("How do I replace a broken sensor?", {"howto"}),  # a part swapped, no substitute asked for
    ("When was the old API replaced?", {"year"}),
    ("How old must I be to open an account?", {"number", "measure:time"}),  # an age, not a year
    ("Which simulators import NeuroML models by converting them?", {"listing"}),  # a plural noun, a verb
    ("Which attribute stores dimension names in Zarr?", {"which:attribute"}),  # a noun, then a verb in -s
    ("I don't own a smoker. Can I still make the ribs?", {"substitute"}),
    ("What can I use instead of turnip greens in the soup?", {"substitute"}),
    ("Can I make quarkbällchen without quark?", {"substitute"}),
    ("Is there a substitute for guanciale?", {"substitute"}),
    ("What if I don't have a dutch oven?", {"substitute"}),
    ("Can I replace the butter with oil?", {"substitute"}),
    ("What can I use to replace the yeast?", {"substitute"}),
    ("What is consolidated metadata in Zarr and why does it make opening faster?",
     {"definition:consolidated metadata", "reason"}),
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
    value = bonus(shapes("How much compliance is there?"), "prose", text, False)
    assert value == (NUMBER_FOR_HOW_MANY if fits else 0.0)


@pytest.mark.parametrize("question, text, measured", [
    ("How many levels of compliance are there?", "There are three Levels of compliance.", True),
    ("How many levels of compliance are there?", "Any Level 1 or Level 2 file is valid.", False),  # numbers the levels
    ("How many qubits did the experiment use?", "The largest circuits have 53 qubits and 20 cycles.", True),
    ("How many qubits did the experiment use?", "We ran 20 cycles of the circuit.", False),
    ("How many tools does the server offer?", "It serves three read-only tools to clients.", True),
    ("How strong is homemade kvass?", "A week of fermentation should yield 1.0%-2.5% alcohol.", True),
    ("How strong is homemade kvass?", "Use 2 litres of water for 300 g of bread.", False),
    ("limoncello alcohol percentage", "The ABV should remain somewhere around 28-30%.", True),
    ("limoncello alcohol percentage", "1. Pour the alcohol into a 1 liter mason jar", False),
    ("What time span can nanosecond datetimes cover?", "About +/- 292 years centered around the epoch.", True),
    ("What time span can nanosecond datetimes cover?", "As of version 0.11, cftime is used.", False),
    ("How long should the dough rise?", "5. Let it rise for 2 hours.", True),
    ("How long should the dough rise?", "3. Fold it twice and cover it.", False),  # the marker is no time
    ("How large should my chunks be?", "Aim for at least one million elements per chunk.", True),
    ("At what temperature do I heat the milk?", "Heat the milk to 85°C, stirring.", True),
    ("At what temperature do I heat the milk?", "Heat 2 litres of milk, stirring.", False),
])
def test_a_number_of_the_measure_asked_for(question, text, measured):
    assert of_measure(shapes(question), text) is measured


def test_a_run_of_digits_is_no_quantity_and_is_read_in_linear_time():
    # From inside "1111..." each start ran to its end (minutes on 200,000); bench/abuse.py times it.
    question_shapes = shapes("How many qubits, how long and how large?")
    assert of_measure(question_shapes, "1" * 200_000 + " x") is False
    assert of_measure(question_shapes, "1" * 200_000 + " qubits") is True


@pytest.mark.parametrize("text, expected", [
    ("The largest circuits have 53 qubits.", NUMBER_FOR_HOW_MANY + MEASURE_FOR_HOW_MANY),
    ("We ran 20 cycles of the circuit.", NUMBER_FOR_HOW_MANY),
    ("The qubits are arranged on a grid.", 0.0),
])
def test_a_number_of_the_measure_asked_for_fits_better_than_another_number(text, expected):
    value = bonus(shapes("How many qubits did the experiment use?"), "prose", text, False)
    assert value == pytest.approx(expected, abs=1e-12)


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
    value = bonus(shapes("How much should the dough rise?"), kind, text, False)
    block = BLOCK_OTHERWISE if kind == "list" else 0.0  # a whole list is rarely the point of "how long"
    assert value == pytest.approx(block + (NUMBER_FOR_HOW_MANY if fits else 0.0), abs=1e-12)


def test_words_of_any_script_are_question_terms_and_a_plural_matches_its_singular():
    assert terms("Which cheese goes into a crêpe with Gruyère?") == {"chees", "goes", "crêp", "gruyèr"}
    assert matches(terms("crêpe gruyère file"), "Cook the crêpes with Gruyère; see the files.") == {
        "crêp", "gruyèr", "file"}
    assert terms("store stores stored storing") == {"stor"}


def test_quantifiers_and_comparisons_are_no_question_terms():
    # "other than 8000" asks for another port: the answer says "another port", never "than";
    # "Is there any ..." asks whether something exists and names nothing.
    assert terms("Is there any way to start Klea on a port other than 8000?") == {"way", "start", "klea", "port", "8000"}
    assert terms("Do some stores have another name?") == {"stor", "have", "another", "name"}


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


def test_the_terms_of_a_long_question_are_looked_up_not_compared_with_every_word():
    """3,000 question terms against 20,000 words (every term compared with every word:
    14 s a passage; a 4,000-character question holds some 500 terms)."""
    wanted = {f"term{i}x" for i in range(3000)} | {"stir", "po", "ab"}
    text = " ".join(f"word{i}y" for i in range(20_000)) + " stirring po2 abc"
    assert matches(wanted, text) == {"stir", "po"}


@pytest.mark.parametrize("text, expected", [
    ("Date: March 3, 2019", "year"),
    ("**Published**: 2019", "year"),
    ("Authors: Quill editor developers", "name"),
    ("Zarr V2 Format: Quill uses an attribute.", ""),  # a label, but of no field kind
    ("The date was set in March: late, as always.", ""),  # prose, not a field
])
def test_the_kind_of_value_a_field_line_holds(text, expected):
    assert field(text) == expected


@pytest.mark.parametrize("question, expected", [
    ("Which pip extra installs every optional dependency?", {"code name"}),
    ("What option turns the cache off?", {"code name"}),
    ("Which argument of open_dataset controls decoding?", {"code name"}),
    ("What function joins datasets?", {"code name"}),
    ("Which options are there?", {"listing"}),  # what is there, not a name to type
])
def test_questions_asking_for_a_name_written_in_code(question, expected):
    assert set(shapes(question)) == expected


@pytest.mark.parametrize("question, part, expected", [
    ("What is the first step when upgrading?", 0, PLACE_FOR_POSITION),
    ("What is the first step when upgrading?", 1, 0.0),
    ("Which is the final stage of brewing?", 3, PLACE_FOR_POSITION),  # the last of four
    ("Which is the final stage of brewing?", 0, 0.0),
    ("How do I upgrade?", 0, 0.0),
])
def test_a_step_asked_for_by_its_place_fits_at_that_place(question, part, expected):
    assert in_place(shapes(question), part, 4) == expected


@pytest.mark.parametrize("kind, text, expected", [
    ("item", "2. Simmer it, stirring, until the sauce coats the back of a spoon.", SIGN_FOR_DONE),
    ("item", "4. Take the loaf out when it sounds hollow underneath.", SIGN_FOR_DONE),
    ("prose", "You'll know the dough is ready by its smooth skin.", SIGN_FOR_DONE),
    ("prose", "The roast is safe to eat at an internal temperature of 63°C.", SIGN_FOR_DONE),
    ("item", "1. Put the sugar and the water in a pan.", IMPERATIVE_FOR_HOWTO),  # a step, no sign
    ("item", "9. Bake for 40 minutes. The pastry should be golden when done.", SIGN_FOR_DONE + IMPERATIVE_FOR_HOWTO),
    ("item", "2. Once the butter melts, add the flour.", 0.0),  # an order of steps, no sign
    ("item", "3. Add the cream when the syrup turns amber.", SIGN_FOR_DONE + IMPERATIVE_FOR_HOWTO),
    ("prose", "The gnocchi rise to the top when they are ready.", SIGN_FOR_DONE),
    ("prose", "It answers 503 when the database does not answer.", 0.0),  # a condition, no sign of done
    ("code", "make caramel --until done", CODE_FOR_HOWTO),  # code gives no sign
])
def test_a_passage_giving_the_sign_answers_how_do_i_know_when_it_is_done(kind, text, expected):
    # "How do I" favours any instruction; the step saying when to stop is the one asked for.
    question_shapes = shapes("How do I know when the caramel is cooked enough?")
    assert bonus(question_shapes, kind, text, False) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("It is tested with Java versions 8 and 11.", VERSION_FOR_VERSION),
    ("- Python (3.12 or later)", VERSION_FOR_VERSION),
    ("It validates v1.8.1 and v2.x files.", VERSION_FOR_VERSION),
    ("Requires `numpy>=2`.", VERSION_FOR_VERSION),
    ("Python 2 is no longer supported by the Python community.", 0.0),  # a version named, no number given
    ("Support lasts 30 months, and 1.5% of users need longer.", 0.0),  # a time and a share
    ("Cite it: https://doi.org/10.5334/jors.148 or https://example.org/v1.2/", 0.0),  # an address or a DOI
    ("As of v0.8n a menu item exports it.", VERSION_FOR_VERSION),
    ("The plugin needs PyLEMS 0.5.8+ to run.", VERSION_FOR_VERSION),
    ("It scored 0.95 and used 1.5 GB.", 0.0),  # decimals, no version
    # a version or an address starts where its run does: from each start inside one it ran to the end
    ("1." * 100_000 + " or later", VERSION_FOR_VERSION),
    ("a" * 200_000 + "://x.org/1.2", 0.0),
])
def test_a_passage_giving_version_numbers_answers_which_version(text, expected):
    # The terse list of numbers is what is asked; MiniLM prefers prose about the software.
    assert bonus(shapes("Which Java versions is the tool tested with?"), "prose", text, False) == expected


@pytest.mark.parametrize("question, text, expected", [
    ("Which SDK does Klea use to call MCP tools?", "The calls go through the official `mcp` Python SDK.", NAMED_FOR_WHICH),
    ("Which SDK does Klea use to call MCP tools?", "It inherits `HOME` from Klea (the SDK's safe set).", 0.0),
    ("Which attribute stores dimension names in Zarr V2?", "Quill uses a special attribute: `_ARRAY_DIMENSIONS`.",
     NAMED_FOR_WHICH),
    ("Which attribute stores dimension names in Zarr V2?", "It is removed from the attributes dictionary.", 0.0),
])
def test_a_passage_naming_the_one_thing_a_which_question_asks_for(question, text, expected):
    # The noun asked about with a name in code or capitals right before it, or in code after it.
    assert bonus(shapes(question), "prose", text, False) == expected


@pytest.mark.parametrize("text, expected", [
    ("By default Quill uses a feature called consolidated metadata, storing all metadata under one key.",
     SUBJECT_FOR_DEFINITION),
    ("Consolidated metadata is the metadata of a whole store under one key.", SUBJECT_FOR_DEFINITION),  # as before
    ("Reading stores without consolidated metadata is slower.", 0.0),
])
def test_what_is_x_and_why_is_answered_by_the_passage_introducing_x(text, expected):
    question = "What is consolidated metadata in Zarr and why does it make opening faster?"
    assert bonus(shapes(question), "prose", text, False) == expected


@pytest.mark.parametrize("question, kind, section, expected", [
    ("What is the recipe for no-knead pizza dough?", "list", "Ingredients", INGREDIENTS_FOR_RECIPE),
    ("What is the recipe for no-knead pizza dough?", "list", "Directions", 0.0),
    ("What is the recipe for no-knead pizza dough?", "item", "Ingredients", 0.0),  # the whole list
    ("How long should no-knead pizza dough rise?", "list", "Ingredients", 0.0),
])
def test_the_recipe_for_x_is_its_ingredient_list(question, kind, section, expected):
    assert under_heading(shapes(question), kind, section) == expected


def test_a_name_starts_where_a_token_does_and_is_read_in_linear_time():
    # From inside "A.A.A..." each start ran to the run's end (seconds on 8,000); bench/abuse.py times it.
    question_shapes = shapes("Which SDK does Klea use?")
    assert names_one(question_shapes, "A." * 100_000 + " SDK") is True
    assert names_one(question_shapes, "A." * 100_000 + " x") is False


@pytest.mark.parametrize("kind, text, expected", [
    ("item", "- 420ml quark (plain yoghurt can be used as a replacement)", SUBSTITUTE_FOR_SUBSTITUTE),
    ("prose", "If you can not find turnips with their greens still attached Mustard greens can be substituted.",
     SUBSTITUTE_FOR_SUBSTITUTE),
    ("prose", "You can also use pumpkin instead of squash.", SUBSTITUTE_FOR_SUBSTITUTE),
    ("item", "- 1 tbsp rice vinegar or alternatively white wine vinegar", SUBSTITUTE_FOR_SUBSTITUTE),
    ("prose", "If you don't have a dutch oven, a covered pot works.", SUBSTITUTE_FOR_SUBSTITUTE),
    ("prose", "Quark is a type of fresh dairy product, like curd cheese.", 0.0),  # what it is, no replacement
    ("item", "- 420ml quark", 0.0),
    ("list", "- butter\n- or use oil instead", BLOCK_OTHERWISE),  # a list answers "which ... are", not this
])
def test_a_passage_offering_a_replacement_answers_what_to_use_instead(kind, text, expected):
    # The dish's description shares the question's words and MiniLM favours it; the line
    # offering the replacement is what is asked.
    question_shapes = shapes("Can I make quarkbällchen without quark?")
    assert bonus(question_shapes, kind, text, False) == pytest.approx(expected)


@pytest.mark.parametrize("text, expected", [
    ("It was written in 1998.", YEAR_FOR_WHEN),
    ("Extracted from tablets from Babylonia, ca. 1740 BC.", YEAR_FOR_WHEN),  # a date of an era
    ("Pompeii was buried in AD 79.", YEAR_FOR_WHEN),
    ("The dish dates from the 16th century.", YEAR_FOR_WHEN),
    ("An eighteenth-century recipe.", YEAR_FOR_WHEN),
    ("A stew of sorts, made in spring.", NO_YEAR_FOR_WHEN),
    ("It serves 12 and keeps 3 days.", NO_YEAR_FOR_WHEN),  # numbers, no year
])
def test_a_passage_holding_a_year_an_era_date_or_a_century_answers_when(text, expected):
    assert bonus(shapes("When was the recipe first written down?"), "prose", text, False) == pytest.approx(expected)

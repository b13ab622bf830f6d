"""loaddomains / dumpdomains in Klea's JSON shape."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from domains.models import Domain, FilterField, Store

CONFIG = {
    "domains": {
        "papers": {
            "description": "Lab papers",
            "vector_stores": [{"name": "papers-v"}, {"name": "papers"}],
            "bm25_stores": [{"name": "papers"}],
            "filter_fields": [
                {"name": "year", "description": "Publication year", "value_type": "int"},
                {"name": "authors", "description": "Authors", "value_type": "list", "person_name": True},
            ],
        }
    }
}


def write(tmp_path, data, name="domains.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.django_db
def test_load_creates_then_is_idempotent(tmp_path):
    path = write(tmp_path, CONFIG)
    out = StringIO()
    call_command("loaddomains", path, stdout=out)
    assert out.getvalue().splitlines() == ["created domain papers", "1 domains, 2 stores"]
    out = StringIO()
    call_command("loaddomains", path, stdout=out)
    assert out.getvalue().splitlines() == ["updated domain papers", "1 domains, 2 stores"]
    assert Domain.objects.filter(name="papers").count() == 1
    assert dict(Store.objects.filter(domain__name="papers").values_list("name", "mode")) == {
        "papers-v": "vector",
        "papers": "both",
    }
    fields = FilterField.objects.filter(domain__name="papers").order_by("name")
    assert [(f.name, f.value_type, f.person_name) for f in fields] == [
        ("authors", "list", True),
        ("year", "int", False),
    ]


@pytest.mark.django_db
def test_dump_round_trips(tmp_path):
    call_command("loaddomains", write(tmp_path, CONFIG), stdout=StringIO())
    out = StringIO()
    call_command("dumpdomains", stdout=out)
    dumped = json.loads(out.getvalue())["domains"]["papers"]
    assert dumped["vector_stores"] == [{"name": "papers"}, {"name": "papers-v"}]
    assert dumped["bm25_stores"] == [{"name": "papers"}]
    assert dumped["filter_fields"] == [
        {"name": "authors", "description": "Authors", "value_type": "list", "person_name": True},
        {"name": "year", "description": "Publication year", "value_type": "int"},
    ]
    assert (dumped["default_k"], dumped["k_max"], dumped["min_relevance"]) == (8, 10, 0.15)
    assert "examples" not in dumped  # none given
    # Loading the dump changes nothing.
    call_command("loaddomains", write(tmp_path, {"domains": {"papers": dumped}}, "again.json"), stdout=StringIO())
    assert Store.objects.filter(domain__name="papers").count() == 2


@pytest.mark.django_db
def test_example_questions_load_as_lines_and_dump_as_a_list(tmp_path):
    config = json.loads(json.dumps(CONFIG))
    config["domains"]["papers"]["examples"] = ["Who proved FLP? ", "", "What is Raft?"]
    call_command("loaddomains", write(tmp_path, config), stdout=StringIO())
    domain = Domain.objects.get(name="papers")
    assert (domain.examples, domain.example_questions) == ("Who proved FLP?\nWhat is Raft?", ["Who proved FLP?", "What is Raft?"])
    out = StringIO()
    call_command("dumpdomains", stdout=out)
    assert json.loads(out.getvalue())["domains"]["papers"]["examples"] == ["Who proved FLP?", "What is Raft?"]
    config["domains"]["papers"]["examples"] = ["two\nlines"]
    with pytest.raises(CommandError, match=r"domains\.papers\.examples: expected a list of one-line questions$"):
        call_command("loaddomains", write(tmp_path, config, "bad.json"), stdout=StringIO())


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data, message",
    [
        ("{not json", "not valid JSON"),
        ({"domain": {}}, "domains: expected dict, got NoneType"),
        ({"domains": {"x": {"description": "d", "filter_fields": [{"name": "2bad"}]}}},
         "domains.x.filter_fields[0]: name: Filter field name must be an identifier"),
        ({"domains": {"x": {"description": "d", "k_max": 2, "default_k": 5}}},
         "domains.x: k_max: k_max (2) must be at least default_k (5)."),
        ({"domains": {"x": {"description": "d", "filter_fields": [{"name": "year", "value_type": "date"}]}}},
         "domains.x.filter_fields[0]: value_type: Value 'date' is not a valid choice."),
        ({"domains": {"x": {"description": "d", "vector_stores": [{"name": ""}]}}},
         "domains.x.vector_stores[0].name: a non-empty string is required"),
        ({"domains": {"undefined": {"description": "d"}}},
         "domains.undefined: name: 'undefined' is reserved"),
        # the model validator checks the rule of domains/names.py (ingestion's, which was stricter)
        ({"domains": {"lab\tnotes": {"description": "d"}}},
         "name: Domain name: not empty, no leading or trailing spaces, no control characters (newlines, tabs)"),
    ],
)
def test_malformed_files_name_the_problem_and_write_nothing(tmp_path, data, message):
    with pytest.raises(CommandError) as info:
        call_command("loaddomains", write(tmp_path, data), stdout=StringIO())
    assert message in str(info.value)
    assert not Domain.objects.filter(name__in=["x", "undefined"]).exists()


@pytest.mark.django_db
def test_store_of_another_domain_is_refused(tmp_path):
    call_command("loaddomains", write(tmp_path, CONFIG), stdout=StringIO())
    other = {"domains": {"other": {"description": "o", "vector_stores": [{"name": "papers"}]}}}
    with pytest.raises(CommandError, match="domains.other: store 'papers' already belongs to domain 'papers'"):
        call_command("loaddomains", write(tmp_path, other, "o.json"), stdout=StringIO())
    assert not Domain.objects.filter(name="other").exists()


def test_missing_file(tmp_path):
    with pytest.raises(CommandError, match="nope.json: no such file"):
        call_command("loaddomains", str(tmp_path / "nope.json"))

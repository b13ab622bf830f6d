"""DOI services over real HTTP (local fakes of Crossref, OpenAlex, Semantic Scholar):
round-robin order, fallbacks on 429/5xx/timeouts/untitled records, bounded retries,
the shared case-insensitive cache, polite-pool headers and once-only URL encoding."""

import socket

import pytest

from bench.fake_doi_services import FakeDoiServices
from ingestion.metadata.biblio.resolver import DoiLookup, DoiResolver
from ingestion.metadata.biblio.services import SERVICES
from ingestion.models import DoiRecord

SICI = "10.1002/(sici)1096-9861(19971020)387:2<167::aid-cne1>3.0.co;2-z"
NATURE = "10.1038/s41586-019-1666-5"
RECORDS = {
    NATURE: {
        "title": "Quantum supremacy using a programmable superconducting processor",
        "authors": ["Frank Arute", "Kunal Arya", "John M. Martinis"],
        "year": 2019,
        "journal": "Nature",
    },
    "10.1016/0022-0000(85)90041-8": {
        "title": "Probabilistic counting algorithms for data base applications",
        "authors": ["Philippe Flajolet", "G. Nigel Martin"],
        "year": 1985,
        "journal": "Journal of Computer and System Sciences",
    },
    "10.1103/PhysRevA.66.014304": {
        "title": "Engineering entanglement between two cavity modes",
        "authors": ["Manzoor Ikram", "Farhan Saif"],
        "year": 2002,
        "journal": "Physical Review A",
    },
    "10.7717/peerj-cs.118": {
        "title": "VESPA: Very large-scale Evolutionary and Selective Pressure Analyses",
        "authors": ["Andrew E. Webb", "Thomas A. Walsh", "Mary J. O'Connell"],
        "year": 2017,
        "journal": "PeerJ Computer Science",
    },
    SICI: {"title": "Neurons of the dorsal horn", "authors": ["Ann Smith"], "year": 1997, "journal": "J Comp Neurol"},
}
NATURE_RECORD = RECORDS[NATURE]
MAILTO = "ingest@example.org"


@pytest.fixture
def fakes(settings, db):
    services = FakeDoiServices(RECORDS).start()
    for name, value in services.settings().items():
        setattr(settings, name, value)
    settings.KLEA_DOI_TIMEOUT = 2.0  # a scripted timeout costs this; a loaded machine must still answer within it
    settings.KLEA_DOI_RETRIES = 1
    settings.KLEA_DOI_BACKOFF = 0
    settings.KLEA_INGEST_MAILTO = MAILTO
    settings.KLEA_SEMANTIC_SCHOLAR_API_KEY = ""
    yield services
    services.stop()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_round_robin_rotates_the_first_service_per_lookup(fakes):
    resolver = DoiResolver()
    dois = [NATURE, "10.1016/0022-0000(85)90041-8", "10.1103/PhysRevA.66.014304", "10.7717/peerj-cs.118"]
    lookups = [resolver.resolve(doi) for doi in dois]
    assert fakes.services_asked() == ["crossref", "openalex", "semanticscholar", "crossref"]
    assert [(lk.service, lk.record["title"], lk.requests) for lk in lookups] == [
        ("crossref", "Quantum supremacy using a programmable superconducting processor", 1),
        ("openalex", "Probabilistic counting algorithms for data base applications", 1),
        ("semanticscholar", "Engineering entanglement between two cavity modes", 1),
        ("crossref", "VESPA: Very large-scale Evolutionary and Selective Pressure Analyses", 1),
    ]


@pytest.mark.parametrize("failure", ["429", "500", "503", "timeout", "notitle", "html", "404"])
def test_a_failing_service_moves_on_to_the_next(fakes, failure):
    fakes.script("crossref", failure)
    lookup = DoiResolver().resolve(NATURE)
    assert fakes.services_asked() == ["crossref", "openalex"]
    assert lookup == DoiLookup(NATURE_RECORD, "openalex", cached=False, requests=2)


def test_fallthrough_goes_round_in_rotation_order(fakes):
    resolver = DoiResolver()
    resolver.resolve("10.7717/peerj-cs.118")  # crossref first; next lookup starts at openalex
    fakes.seen.clear()
    fakes.script("openalex", "429")
    fakes.script("semanticscholar", "500")
    lookup = resolver.resolve(NATURE)
    assert fakes.services_asked() == ["openalex", "semanticscholar", "crossref"]
    assert (lookup.service, lookup.record) == ("crossref", NATURE_RECORD)


def test_unreachable_service_moves_on(fakes, settings):
    settings.KLEA_CROSSREF_URL = f"http://127.0.0.1:{_closed_port()}"
    lookup = DoiResolver().resolve(NATURE)
    assert fakes.services_asked() == ["openalex"]
    assert (lookup.service, lookup.requests) == ("openalex", 2)


def test_no_reachable_service_pauses_lookups_until_reset(fakes, settings, caplog):
    for name in ("KLEA_CROSSREF_URL", "KLEA_OPENALEX_URL", "KLEA_SEMANTIC_SCHOLAR_URL"):
        setattr(settings, name, f"http://127.0.0.1:{_closed_port()}")
    resolver = DoiResolver()
    caplog.set_level("INFO", logger="klea.ingestion.biblio")
    assert resolver.resolve(NATURE) == DoiLookup(None, "", cached=False, requests=6)  # 2 rounds x 3 services
    # one line for the lookup, not one per request
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [(
        "WARNING",
        f"DOI {NATURE}: no service answered (crossref ConnectError, openalex ConnectError, "
        "semanticscholar ConnectError; 6 requests); not cached, retried next time; "
        "DOI services unreachable: no lookups for 300 s",
    )]
    assert resolver.resolve("10.7717/peerj-cs.118") == DoiLookup(None)  # paused: no request
    for name, value in fakes.settings().items():
        setattr(settings, name, value)
    assert resolver.resolve(NATURE).requests == 0
    resolver.reset()
    assert (resolver.resolve(NATURE).service, fakes.services_asked()) == ("crossref", ["crossref"])
    assert DoiRecord.objects.count() == 1


def test_a_reachable_service_means_no_pause(fakes, settings, caplog):
    settings.KLEA_CROSSREF_URL = f"http://127.0.0.1:{_closed_port()}"
    settings.KLEA_OPENALEX_URL = f"http://127.0.0.1:{_closed_port()}"
    fakes.script("semanticscholar", "500", "500")
    resolver = DoiResolver()
    caplog.set_level("INFO", logger="klea.ingestion.biblio")
    assert resolver.resolve(NATURE).record is None
    assert [r.getMessage() for r in caplog.records] == [
        f"DOI {NATURE}: no service answered (crossref ConnectError, openalex ConnectError, "
        "semanticscholar answered 500; 6 requests); not cached, retried next time"]
    assert (resolver.resolve(NATURE).service, fakes.services_asked()) == (
        "semanticscholar", ["semanticscholar"] * 3)


def test_not_found_everywhere_is_cached_and_never_asked_again(fakes):
    resolver = DoiResolver()
    first = resolver.resolve("10.9999/unknown.1")
    second = resolver.resolve("10.9999/UNKNOWN.1")
    assert fakes.services_asked() == ["crossref", "openalex", "semanticscholar"]
    assert first == DoiLookup(None, "", cached=False, requests=3)
    assert second == DoiLookup(None, "", cached=True, requests=0)
    assert list(DoiRecord.objects.values_list("key", "doi", "found", "service", "record")) == [
        ("10.9999/unknown.1", "10.9999/unknown.1", False, "", {})
    ]


def test_transient_failures_are_retried_in_bounded_rounds_and_not_cached(fakes):
    for service in ("crossref", "openalex", "semanticscholar"):
        fakes.script(service, "500", "429")
    resolver = DoiResolver()
    lookup = resolver.resolve(NATURE)
    assert fakes.services_asked() == ["crossref", "openalex", "semanticscholar"] * 2  # 1 + KLEA_DOI_RETRIES rounds
    assert lookup == DoiLookup(None, "", cached=False, requests=6)
    assert DoiRecord.objects.count() == 0
    fakes.seen.clear()
    later = resolver.resolve(NATURE)  # the services recovered: asked again, then cached
    assert (later.service, later.record, fakes.services_asked()) == ("openalex", NATURE_RECORD, ["openalex"])


def test_a_retry_round_asks_only_the_services_that_failed_transiently(fakes):
    fakes.script("crossref", "404")
    fakes.script("openalex", "timeout")
    fakes.script("semanticscholar", "503")
    lookup = DoiResolver().resolve(NATURE)
    assert fakes.services_asked() == ["crossref", "openalex", "semanticscholar", "openalex"]
    assert (lookup.service, lookup.record, lookup.requests) == ("openalex", NATURE_RECORD, 4)


def test_one_cache_row_per_doi_whatever_the_case(fakes):
    resolver = DoiResolver()
    first = resolver.resolve("10.1038/S41586-019-1666-5")
    fakes.seen.clear()
    again = [resolver.resolve(NATURE), DoiResolver().resolve("10.1038/s41586-019-1666-5".upper())]
    assert fakes.seen == []
    assert first == DoiLookup(NATURE_RECORD, "crossref", cached=False, requests=1)
    assert again == [DoiLookup(NATURE_RECORD, "crossref", cached=True)] * 2
    assert list(DoiRecord.objects.values_list("key", "doi", "found", "service")) == [
        (NATURE, "10.1038/S41586-019-1666-5", True, "crossref")
    ]


def test_network_off_uses_only_the_cache(fakes):
    resolver = DoiResolver()
    assert resolver.resolve(NATURE, network=False) == DoiLookup(None)
    assert fakes.seen == []
    resolver.resolve(NATURE)
    assert resolver.resolve(NATURE, network=False) == DoiLookup(NATURE_RECORD, "crossref", cached=True)
    assert len(fakes.seen) == 1


def test_polite_pool_contact_user_agent_and_fields(fakes, settings):
    settings.KLEA_SEMANTIC_SCHOLAR_API_KEY = "s2-key"
    for service in ("crossref", "openalex"):
        fakes.script(service, "404")
    DoiResolver().resolve(NATURE)
    agent = f"Klea/1.0 (self-hosted retrieval-augmented generation server; mailto:{MAILTO})"
    assert [(s.service, s.query, s.headers["User-Agent"], s.headers.get("x-api-key")) for s in fakes.seen] == [
        ("crossref", {"mailto": MAILTO}, agent, None),
        ("openalex", {"mailto": MAILTO}, agent, None),
        ("semanticscholar", {"fields": "title,authors,year,venue,journal"}, agent, "s2-key"),
    ]


def test_user_agent_without_contact(fakes, settings):
    settings.KLEA_INGEST_MAILTO = ""
    DoiResolver().resolve(NATURE)
    assert (fakes.seen[0].query, fakes.seen[0].headers["User-Agent"]) == (
        {}, "Klea/1.0 (self-hosted retrieval-augmented generation server)"
    )


def test_doi_is_percent_encoded_exactly_once_in_every_service_path(fakes):
    fakes.script("crossref", "500")
    fakes.script("openalex", "500")
    lookup = DoiResolver().resolve(SICI)
    encoded = "10.1002/%28sici%291096-9861%2819971020%29387%3A2%3C167%3A%3Aaid-cne1%3E3.0.co%3B2-z"
    assert [s.path for s in fakes.seen] == [
        f"/works/{encoded}", f"/works/doi:{encoded}", f"/graph/v1/paper/DOI:{encoded}"
    ]
    assert (lookup.service, lookup.record["title"]) == ("semanticscholar", "Neurons of the dorsal horn")


def test_each_service_answer_is_normalised_to_one_record_shape():
    crossref, openalex, semanticscholar = (s.parse for s in SERVICES)
    assert crossref({"message": {
        "title": ["<i>In vivo</i> imaging of &amp; the   brain"],
        "author": [{"given": "Ross G.", "family": "DOUGLAS"}, {"name": "LIGO Scientific Collaboration"}],
        "published-online": {"date-parts": [[2013, 11]]},
        "published-print": {"date-parts": [[2014, 1]]},
        "issued": {"date-parts": [[2013, 11]]},
        "container-title": ["Clinical Science"],
    }}) == {
        "title": "In vivo imaging of & the brain",
        "authors": ["Ross G. Douglas", "LIGO Scientific Collaboration"],
        "year": 2014,
        "journal": "Clinical Science",
    }
    assert crossref({"message": {"title": [], "issued": {"date-parts": [[None]]}}}) is None
    assert openalex({
        "title": "Tidy Data", "publication_year": 2014,
        "authorships": [{"author": {"display_name": "Hadley Wickham"}, "raw_author_name": "H. Wickham"}],
        "primary_location": {"source": None},
        "keywords": [{"display_name": "Data cleaning", "score": 0.6}],
    }) == {"title": "Tidy Data", "authors": ["Hadley Wickham"], "year": 2014, "keywords": ["Data cleaning"]}
    assert semanticscholar({
        "title": "Tidy Data", "year": 2014, "venue": "J. Stat. Softw.", "journal": None,
        "authors": [{"name": "H. Wickham"}],
    }) == {"title": "Tidy Data", "authors": ["H. Wickham"], "year": 2014, "journal": "J. Stat. Softw."}
    assert semanticscholar({"title": None, "authors": []}) is None

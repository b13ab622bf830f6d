"""The HTTP API, the sign-in pages and /health through Django's test client (exact JSON)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Group, User
from django.test import Client

from chat.models import ChatMessage, ChatSession
from chat.turn_lock import TurnLock
from domains.models import Domain

from .fake_ollama import FakeOllama, closed_port_url
from .pipeline_data import make_domains

pytestmark = pytest.mark.django_db
HH = "What does the Hodgkin-Huxley model describe?"
NOT_SIGNED_IN = {"error": {"code": "not_authenticated", "message": "sign in (/accounts/login/) to use the API"}}


@pytest.fixture
def setup(settings):
    settings.KLEA_LLM_BACKEND = "extractive"
    settings.KLEA_RAG_GUARD_MODEL = ""
    settings.REDIS_URL = ""
    Domain.objects.update(active=False)  # rows other tests committed (rolled back with this test)
    domains = make_domains()
    group = Group.objects.create(name="lab")
    domains["neuro"].allowed_groups.add(group)
    alice = User.objects.create_user("alice", password="pw-alice-123")
    alice.groups.add(group)
    bob = User.objects.create_user("bob", password="pw-bob-123")
    return {"alice": alice, "bob": bob, "domains": domains}


def client_for(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def post(client, path, body, **extra):
    return client.post(path, json.dumps(body), content_type="application/json", **extra)


def test_every_endpoint_needs_a_signed_in_user(setup):
    client = Client()
    for method, path in [("get", "/api/domains"), ("get", "/api/sessions"), ("post", "/api/sessions"),
                         ("get", "/api/sessions/1"), ("get", "/api/sessions/1/messages"), ("post", "/api/query")]:
        response = getattr(client, method)(path)
        assert (response.status_code, response.json()) == (401, NOT_SIGNED_IN), path


def test_domains_lists_only_the_queryable_ones(setup):
    neuro = {"name": "neuro", "description": "Computational neuroscience papers: neuron models, spiking, synaptic "
             "plasticity.", "examples": [], "filter_fields": [
                 {"name": "authors", "value_type": "string", "description": ""},
                 {"name": "keywords", "value_type": "list", "description": ""},
                 {"name": "year", "value_type": "int", "description": ""}]}
    arrays = {"name": "arrays", "description": "Labelled N-dimensional arrays in Python: resampling time series, "
              "netCDF input and output.", "examples": [], "filter_fields": []}
    empty = {"name": "empty", "description": "Nothing indexed yet.", "examples": [], "filter_fields": []}
    assert client_for(setup["alice"]).get("/api/domains").json() == {"domains": [arrays, empty, neuro]}
    assert client_for(setup["bob"]).get("/api/domains").json() == {"domains": [arrays, empty]}


def test_query_runs_a_turn_and_stores_it(setup):
    client = client_for(setup["alice"])
    response = post(client, "/api/query", {"text": HH, "domains": ["neuro"]})
    assert response.status_code == 200
    body = response.json()
    session = ChatSession.objects.get(owner=setup["alice"])
    answer = session.messages.get(role="assistant")
    assert body == {
        "session": session.pk, "status": "complete", "answer": answer.content, "route": "domains",
        "domains": ["neuro"], "citations": list(range(1, len(body["references"]) + 1)),
        "references": answer.references, "warnings": [], "errors": [], "message_id": answer.pk,
    }
    hh = next(r for r in body["references"] if r["file_name"] == "hodgkin-huxley.md")
    assert (hh["title"], hh["authors"], hh["year"], hh["doi"]) == (
        "A quantitative description of membrane current", ["Alan Hodgkin", "Andrew Huxley"], 1952,
        "10.1113/jphysiol.1952.sp004764")
    assert hh["urls"] == [
        {"label": "doi", "url": "https://doi.org/10.1113/jphysiol.1952.sp004764"},
        {"label": "orcid", "url": "https://orcid.org/0000-0000-0000-0001"}]
    again = post(client, "/api/query", {"text": "And its conductances?", "session": session.pk})
    assert (again.status_code, again.json()["session"]) == (200, session.pk)
    assert session.messages.count() == 4


def test_query_errors(setup):
    alice, bob = client_for(setup["alice"]), client_for(setup["bob"])
    alice_session = ChatSession.objects.create(owner=setup["alice"])
    cases = [
        (bob, "{oops", 400, "bad_json", "not valid JSON (expecting property name enclosed in double quotes at "
                                         "line 1, column 2)"),
        (bob, b'{"text": "\xff"}', 400, "bad_json", "not valid JSON: not UTF-8 text"),
        (bob, '{"text": "hi", "session": %s}' % ("9" * 5000), 400, "bad_json",
         "not valid JSON: a number of more than 4300 digits"),
        (bob, "[]", 400, "bad_request", "the body must be a JSON object"),
        (bob, {"text": ""}, 400, "bad_request", '"text" must be a non-empty string'),
        (bob, {"text": "\u200b\u200c \u2060\u200d"}, 400, "bad_request", '"text" must be a non-empty string'),
        (bob, {"text": "hi", "filters": "year=2003"}, 400, "bad_request",
         '"filters" must be an object (the filter DSL)'),
        (bob, {"text": HH, "domains": ["neuro"]}, 400, "unknown_domain",
         "no domain named 'neuro' is available to you"),
        (bob, {"text": HH, "domains": ["nope"]}, 400, "unknown_domain", "no domain named 'nope' is available to you"),
        (bob, {"text": HH, "session": alice_session.pk}, 404, "not_found", f"no session {alice_session.pk}"),
    ]
    for client, body, status, code, message in cases:
        data = body if isinstance(body, (str, bytes)) else json.dumps(body)
        response = client.post("/api/query", data, content_type="application/json")
        assert (response.status_code, response.json()) == (status, {"error": {"code": code, "message": message}})
    response = bob.get("/api/query")
    assert (response.status_code, response["Allow"], response.json()) == (
        405, "POST", {"error": {"code": "method_not_allowed", "message": "use POST"}})
    assert ChatMessage.objects.count() == 0


def test_query_on_a_busy_session_is_409(setup):
    client = client_for(setup["alice"])
    session = ChatSession.objects.create(owner=setup["alice"])
    lock = TurnLock(session.pk)
    assert async_to_sync(lock.acquire)()
    try:
        response = post(client, "/api/query", {"text": HH, "session": session.pk})
        assert (response.status_code, response.json()) == (
            409, {"error": {"code": "busy", "message": "this session is answering another question"}})
    finally:
        async_to_sync(lock.release)()


def test_sessions_create_list_rename_messages_delete(setup):
    alice, bob = client_for(setup["alice"]), client_for(setup["bob"])
    created = post(alice, "/api/sessions", {"title": "  Spiking   models "})
    assert created.status_code == 201
    session = ChatSession.objects.get(pk=created.json()["id"])
    payload = {"id": session.pk, "title": "Spiking models", "created_at": session.created_at.isoformat(),
               "updated_at": session.updated_at.isoformat()}
    assert created.json() == payload
    assert alice.get("/api/sessions").json() == {"sessions": [payload]}
    assert bob.get("/api/sessions").json() == {"sessions": []}
    renamed = alice.patch(f"/api/sessions/{session.pk}", json.dumps({"title": "Neurons"}),
                          content_type="application/json")
    session.refresh_from_db()
    assert renamed.json() == {**payload, "title": "Neurons", "updated_at": session.updated_at.isoformat()}
    bad = alice.patch(f"/api/sessions/{session.pk}", json.dumps({"title": 3}), content_type="application/json")
    assert (bad.status_code, bad.json()["error"]["code"]) == (400, "bad_request")
    message = ChatMessage.objects.create(session=session, role="user", content="Hello <b>there</b>")
    assert alice.get(f"/api/sessions/{session.pk}/messages").json() == {
        "session": {**payload, "title": "Neurons", "updated_at": session.updated_at.isoformat()},
        "messages": [{"id": message.pk, "role": "user", "content": "Hello <b>there</b>", "status": "complete",
                      "route": "", "domains": [], "references": [], "warnings": [], "error": "",
                      "created_at": message.created_at.isoformat()}],
    }
    for path in (f"/api/sessions/{session.pk}", f"/api/sessions/{session.pk}/messages"):
        response = bob.get(path)
        assert (response.status_code, response.json()) == (
            404, {"error": {"code": "not_found", "message": f"no session {session.pk}"}})
    assert bob.delete(f"/api/sessions/{session.pk}").status_code == 404
    assert alice.delete(f"/api/sessions/{session.pk}").status_code == 204
    assert not ChatSession.objects.filter(pk=session.pk).exists()


def test_csrf_is_enforced_for_session_authenticated_writes(setup):
    client = client_for(setup["bob"], enforce_csrf_checks=True)
    refused = post(client, "/api/sessions", {"title": "x"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "csrf_failed")
    page = client.get("/")  # the chat page sets the csrftoken cookie
    token = page.cookies["csrftoken"].value
    accepted = post(client, "/api/sessions", {"title": "x"}, HTTP_X_CSRFTOKEN=token)
    assert accepted.status_code == 201


def test_sign_in_pages(setup):
    client = Client()
    assert client.get("/").url == "/accounts/login/?next=/"
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'<label for="id_username">' in page.content
    wrong = client.post("/accounts/login/", {"username": "bob", "password": "nope"})
    assert b"did not match" in wrong.content
    signed_in = client.post("/accounts/login/", {"username": "bob", "password": "pw-bob-123", "next": "/"})
    assert signed_in.url == "/"
    home = client.get("/")
    assert home.status_code == 200 and b"chat/chat.js" in home.content and b"bob" in home.content
    assert client.post("/accounts/logout/").url == "/accounts/login/"
    assert client.get("/api/sessions").status_code == 401


def test_public_chat_without_sign_in(setup, settings):
    settings.KLEA_CHAT_PUBLIC = True
    client = Client()
    assert client.get("/").status_code == 200
    assert [d["name"] for d in client.get("/api/domains").json()["domains"]] == ["arrays", "empty"]
    response = post(client, "/api/query", {"text": "How do I compute monthly means of a time series?",
                                           "domains": ["arrays"]})
    session_id = response.json()["session"]
    assert response.json()["status"] == "complete"
    assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [session_id]
    assert Client().get(f"/api/sessions/{session_id}/messages").status_code == 404  # another visitor


def test_health(setup, settings):
    staff = User.objects.create_user("ops", password="pw-ops-123", is_staff=True)
    client = client_for(staff)
    database = {"ok": True, "pgvector": "0.6.2"}
    extractive = {"backend": "extractive", "ok": True, "url": None}
    assert client.get("/health").json() == {"status": "ok", "ready": False, "database": database, "redis": None,
                                            "model_server": extractive}  # this process never warmed up
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert client.get("/health").json()["redis"] == {"ok": True}
    settings.REDIS_URL = closed_port_url().replace("http", "redis")
    body = client.get("/health").json()
    assert (body["status"], body["redis"]["ok"], body["redis"]["error"].split(":")[0]) == (
        "degraded", False, "ConnectionError")
    settings.REDIS_URL = ""
    settings.KLEA_LLM_BACKEND = "ollama"
    with FakeOllama() as fake:
        settings.OLLAMA_HOST = fake.url
        assert client.get("/health").json()["model_server"] == {"backend": "ollama", "ok": True, "url": fake.url}
    settings.OLLAMA_HOST = url = closed_port_url()
    response = client.get("/health")
    assert (response.status_code, response.json()["status"], response.json()["model_server"]["ok"]) == (
        200, "degraded", False)
    assert response.json()["model_server"]["url"] == url


def test_health_tells_strangers_only_liveness_and_never_credentials(setup, settings, caplog):
    """Anonymous and non-staff callers get status and readiness, with no outgoing request;
    staff details and the log never show a URL's user info, query string or API key."""
    settings.KLEA_LLM_BACKEND = "openai"
    settings.KLEA_OPENAI_API_KEY = "sk-live-key-0123456789"
    with FakeOllama() as fake:
        host = fake.url.removeprefix("http://")
        settings.KLEA_OPENAI_BASE_URL = f"http://klea:hunter2-pw@{host}/v1"
        settings.REDIS_URL = closed_port_url().replace("http://", "redis://:redis-pw-77@")
        for client in (Client(), client_for(setup["bob"])):
            response = client.get("/health")
            assert (response.status_code, response.json()) == (200, {"status": "ok", "ready": False})
        assert fake.gets == []  # no outgoing request for an anonymous or non-staff call
        staff = client_for(User.objects.create_user("ops", password="pw-ops-123", is_staff=True))
        body = staff.get("/health").json()
        assert fake.gets == ["/v1/models"]
    assert body["model_server"] == {"backend": "openai", "ok": False, "url": f"http://{host}/v1",
                                    "error": body["model_server"]["error"]}
    assert body["model_server"]["error"].startswith("HTTPStatusError: Client error '404 Not Found' for url ")
    assert body["redis"]["error"].startswith("ConnectionError: Error 111 connecting to 127.0.0.1:")
    seen = json.dumps(body) + caplog.text
    for secret in ("hunter2-pw", "klea:", "redis-pw-77", "sk-live-key"):
        assert secret not in seen, secret
    assert "[secret]" in body["model_server"]["error"]
    assert [r.getMessage().split(":")[0] for r in caplog.records if r.name == "klea.health"] == [
        "health", "health"]


def bad(status: int, code: str, message: str) -> tuple:
    return status, {"error": {"code": code, "message": message}}


def test_deeply_nested_json_is_bad_json(setup):
    bob = client_for(setup["bob"])
    nested = "[" * 30000 + "]" * 30000
    bodies = [nested, '{"text": "hi", "filters": {"year": ' + nested + "}}", '{"title": ' + nested + "}"]
    for path, body in [("/api/query", bodies[0]), ("/api/query", bodies[1]), ("/api/sessions", bodies[2])]:
        response = bob.post(path, body, content_type="application/json")
        assert (response.status_code, response.json()) == bad(400, "bad_json", "not valid JSON: nested too deeply")
    deep = {"year": 2000}
    for _ in range(30):
        deep = {"$and": [deep]}
    response = post(bob, "/api/query", {"text": "hi", "filters": deep})
    assert (response.status_code, response.json()) == bad(400, "bad_request", '"filters" nests more than 20 levels')
    assert ChatMessage.objects.count() == 0


def test_nul_and_lone_surrogates_are_refused_naming_the_field(setup):
    bob = client_for(setup["bob"])
    cases = [
        ("/api/query", '{"text": "hello\\u0000world"}', '"text"'),
        ("/api/query", '{"text": "hi \\ud800 there"}', '"text"'),
        ("/api/query", '{"text": "hi", "filters": {"authors": "Sin\\u0000ha"}}', '"filters"'),
        ("/api/query", '{"text": "hi", "filters": {"$and": [{"authors": ["\\udfff"]}]}}', '"filters"'),
        ("/api/query", '{"text": "hi", "domains": ["arr\\u0000ays"]}', '"domains"'),
        ("/api/sessions", '{"title": "a\\u0000b"}', '"title"'),
    ]
    for path, body, field in cases:
        response = bob.post(path, body, content_type="application/json")
        assert (response.status_code, response.json()) == bad(
            400, "bad_request", f"{field} contains a NUL character or a lone surrogate"), body
    session = ChatSession.objects.create(owner=setup["bob"])
    renamed = bob.patch(f"/api/sessions/{session.pk}", '{"title": "x\\ud83d"}', content_type="application/json")
    assert (renamed.status_code, renamed.json()) == bad(
        400, "bad_request", '"title" contains a NUL character or a lone surrogate')
    emoji = post(bob, "/api/sessions", {"title": "neurons \U0001f9e0"})  # a surrogate pair in JSON is fine
    assert (emoji.status_code, emoji.json()["title"]) == (201, "neurons \U0001f9e0")
    assert ChatMessage.objects.count() == 0


def test_authentication_comes_before_csrf(setup):
    anonymous = Client(enforce_csrf_checks=True)
    for path in ("/api/query", "/api/sessions"):
        response = post(anonymous, path, {"text": HH})
        assert (response.status_code, response.json()) == (401, NOT_SIGNED_IN), path
    signed_in = client_for(setup["bob"], enforce_csrf_checks=True)
    refused = post(signed_in, "/api/query", {"text": HH})
    assert (refused.status_code, refused.json()) == bad(
        403, "csrf_failed", "CSRF check failed (CSRF cookie not set.); send the csrftoken cookie in X-CSRFToken")
    assert ChatMessage.objects.count() == 0


def test_json_errors_everywhere_under_api(setup, settings):
    bob = client_for(setup["bob"])
    for path in ("/api/sessions/abc/messages", "/api/sessions/-1/messages", "/api/jobs/abc", "/api/nope"):
        response = bob.get(path)
        assert (response.status_code, response.json()) == bad(404, "not_found", f"no API endpoint {path}"), path
    anonymous = Client().post("/api/nope")
    assert (anonymous.status_code, anonymous.json()) == bad(404, "not_found", "no API endpoint /api/nope")
    response = bob.get("/api/jobs/999999")
    assert (response.status_code, response.json()) == bad(404, "not_found", "no job 999999")
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = post(bob, "/api/query", {"text": "x" * 2000})
    assert (response.status_code, response.json()) == bad(
        400, "too_large", "the request body is larger than 1000 bytes")
    for method in ("post", "put", "delete"):
        response = getattr(Client(enforce_csrf_checks=True), method)("/health")
        assert (response.status_code, response["Allow"], response.json()) == (
            405, "GET, HEAD", {"error": {"code": "method_not_allowed", "message": "use GET or HEAD"}}), method
    assert Client().head("/health").status_code == 200


def test_a_failed_store_is_reported_without_driver_details(setup):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE domains_bm25posting RENAME TO broken_postings")
    body = post(client_for(setup["alice"]), "/api/query", {"text": HH, "domains": ["neuro"]}).json()
    failed = "neuro-store:bm25 (domain neuro): ProgrammingError"
    assert (body["status"], body["errors"]) == ("complete", [
        {"code": "retrieval_failed", "message": failed, "node": "retrieve", "fatal": False}])


def test_undeclared_filter_fields_are_reported(setup):
    alice = client_for(setup["alice"])
    response = post(alice, "/api/query", {"text": HH, "domains": ["neuro"],
                                          "filters": {"bogus": 1, "$and": [{"year": {"$gte": 1900}}]}})
    body = response.json()
    assert (body["status"], body["errors"]) == ("complete", [
        {"code": "filter_dropped", "message": "filter field 'bogus' is not declared by domain(s) neuro; ignored",
         "node": "retrieve", "fatal": False}])


def test_stored_answers_of_a_domain_no_longer_allowed_are_hidden(setup):
    alice = client_for(setup["alice"])
    turn = post(alice, "/api/query", {"text": HH, "domains": ["neuro"]}).json()
    assert turn["status"] == "complete" and {r["domain"] for r in turn["references"]} == {"neuro"}
    path = f"/api/sessions/{turn['session']}/messages"
    shown = alice.get(path).json()["messages"]
    assert (shown[1]["content"], shown[1]["references"]) == (turn["answer"], turn["references"])
    setup["alice"].groups.clear()  # alice leaves the lab: neuro is no longer hers
    question, answer = alice.get(path).json()["messages"]
    assert question["content"] == HH
    assert (answer["content"], answer["domains"]) == (
        "(hidden: this answer used a domain that is no longer available to you)", [])
    assert answer["references"] == [{"number": r["number"], "kind": "document", "hidden": True}
                                    for r in turn["references"]]
    assert "Hodgkin" not in json.dumps(answer)
    setup["alice"].groups.add(Group.objects.get(name="lab"))  # access back: the answer is back
    assert alice.get(path).json()["messages"][1]["content"] == turn["answer"]


def test_the_favicon_is_the_chat_pages_icon(db):
    """/favicon.ico (asked for by pages that name no icon, the admin's) redirects to the
    icon the chat pages name, which is served."""
    response = Client().get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (301, "/static/chat/icon.svg")
    assert '<link rel="icon" href="/static/chat/icon.svg" type="image/svg+xml">' in Client().get(
        "/accounts/login/").content.decode()

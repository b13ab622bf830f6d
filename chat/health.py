"""``GET /health``: liveness and readiness for anyone, details for staff (docs/api.md).

Anyone (monitors, load balancers) gets ``{"status": "ok" | "down", "ready": bool}``
from the database alone: an anonymous call makes no outgoing request and says nothing
about the configuration. 503 when the database does not answer (nothing works without
it). ``"ready"`` says whether this server process has loaded its embedding models
(domains/embeddings.py, ``start_warm_up``): until then a question waits for them.

A signed-in active staff user also gets Redis (when REDIS_URL is set) and the model
server, each waited for at most KLEA_HEALTH_TIMEOUT seconds, with ``"status":
"degraded"`` when one fails. URLs are shown without user info or query string, and
error texts have every configured credential masked (chat/redact.py), in the response
and in the log alike.
"""

from __future__ import annotations

import logging

import httpx
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from domains.embeddings import is_ready

from .redact import public_url, scrub, url_secrets

logger = logging.getLogger("klea.health")
# Characters of an error text shown to staff (driver messages can run to pages).
ERROR_CHARS = 300


def configured_secrets() -> list[str]:
    """Every credential in the settings /health touches (URL user info and query
    strings, the OpenAI API key, the database password)."""
    values = [settings.KLEA_OPENAI_API_KEY, settings.DATABASES["default"].get("PASSWORD") or ""]
    for url in (settings.REDIS_URL, settings.OLLAMA_HOST, settings.KLEA_OPENAI_BASE_URL):
        values += url_secrets(url)
    return [v for v in values if v]


def _describe(component: str, exc: Exception) -> str:
    """``"<ExceptionType>: <first line>"`` with credentials masked, cut to ERROR_CHARS; logged."""
    first = (str(exc).strip().splitlines() or [""])[0]
    text = scrub(f"{type(exc).__name__}: {first}", configured_secrets())[:ERROR_CHARS]
    logger.warning("health: %s failed: %s", component, text)
    return text


def check_database() -> dict:
    """``{"ok": True, "pgvector": version}`` or ``{"ok": False, "error"}``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # any driver error means "down" here
        return {"ok": False, "error": _describe("database", exc)}
    return {"ok": True, "pgvector": row[0] if row else None}


def check_redis() -> dict | None:
    """None without REDIS_URL; else ``{"ok": bool, "error"?}`` from a PING."""
    if not settings.REDIS_URL:
        return None
    import redis

    timeout = settings.KLEA_HEALTH_TIMEOUT
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # connection refused, timeout, auth: all "not ok"
        return {"ok": False, "error": _describe("redis", exc)}
    return {"ok": True}


def check_model_server() -> dict:
    """``{"backend", "ok", "url"}`` (+ ``"error"``): extractive needs no server (url None);
    Ollama answers ``GET /api/version``; an OpenAI-compatible server ``GET /models``.
    ``url`` is the configured one without user info or query string."""
    backend = settings.KLEA_LLM_BACKEND
    if backend == "ollama":
        url = settings.OLLAMA_HOST or "http://127.0.0.1:11434"
        probe, headers = url.rstrip("/") + "/api/version", {}
    elif backend == "openai":
        url = settings.KLEA_OPENAI_BASE_URL
        probe = url.rstrip("/") + "/models"
        headers = {"Authorization": f"Bearer {settings.KLEA_OPENAI_API_KEY}"} if settings.KLEA_OPENAI_API_KEY else {}
    else:
        return {"backend": backend, "ok": True, "url": None}
    try:
        response = httpx.get(probe, headers=headers, timeout=settings.KLEA_HEALTH_TIMEOUT)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        return {"backend": backend, "ok": False, "url": public_url(url), "error": _describe("model server", exc)}
    return {"backend": backend, "ok": True, "url": public_url(url)}


def _is_staff(user) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active and user.is_staff)


@csrf_exempt  # read-only: a POST gets 405, not a CSRF page
def health(request):
    """:returns: ``{"status": "ok" | "down", "ready": bool}`` (503 when down); for staff
    ``{"status": "ok" | "degraded" | "down", "ready", "database", "redis",
    "model_server"}``; 405 JSON for methods other than GET and HEAD."""
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse({"error": {"code": "method_not_allowed", "message": "use GET or HEAD"}}, status=405)
        response["Allow"] = "GET, HEAD"
        return response
    database = check_database()
    if not _is_staff(request.user):
        status = "ok" if database["ok"] else "down"
        return JsonResponse({"status": status, "ready": is_ready()}, status=200 if database["ok"] else 503)
    if not database["ok"]:
        return JsonResponse({"status": "down", "ready": is_ready(), "database": database}, status=503)
    redis_status = check_redis()
    model = check_model_server()
    ok = model["ok"] and (redis_status is None or redis_status["ok"])
    return JsonResponse({"status": "ok" if ok else "degraded", "ready": is_ready(), "database": database,
                         "redis": redis_status, "model_server": model})

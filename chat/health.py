"""``GET /health``: database, Redis (when REDIS_URL is set) and the model server, fast.

Each remote check waits at most KLEA_HEALTH_TIMEOUT seconds. 503 when the database does
not answer (nothing works without it); otherwise 200, with ``"status": "degraded"`` when
Redis or the model server fails. ``"ready"`` says whether this server process has loaded
its embedding models (domains/embeddings.py, ``start_warm_up``): until then a question
waits for them.
"""

from __future__ import annotations

import httpx
from django.conf import settings
from django.db import connection
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from domains.embeddings import is_ready


def check_database() -> dict:
    """``{"ok": True, "pgvector": version}`` or ``{"ok": False, "error"}``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
    except Exception as exc:  # any driver error means "down" here
        return {"ok": False, "error": str(exc)}
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
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True}


def check_model_server() -> dict:
    """``{"backend", "ok", "url"}`` (+ ``"error"``): extractive needs no server (url None);
    Ollama answers ``GET /api/version``; an OpenAI-compatible server ``GET /models``."""
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
        return {"backend": backend, "ok": False, "url": url, "error": f"{type(exc).__name__}: {exc}"}
    return {"backend": backend, "ok": True, "url": url}


@csrf_exempt  # read-only: a POST gets 405, not a CSRF page
def health(request):
    """:returns: ``{"status": "ok" | "degraded" | "down", "ready": bool, "database", "redis",
    "model_server"}``; 405 JSON for methods other than GET and HEAD."""
    if request.method not in ("GET", "HEAD"):
        response = JsonResponse({"error": {"code": "method_not_allowed", "message": "use GET or HEAD"}}, status=405)
        response["Allow"] = "GET, HEAD"
        return response
    database = check_database()
    if not database["ok"]:
        return JsonResponse({"status": "down", "ready": is_ready(), "database": database}, status=503)
    redis_status = check_redis()
    model = check_model_server()
    ok = model["ok"] and (redis_status is None or redis_status["ok"])
    return JsonResponse({"status": "ok" if ok else "degraded", "ready": is_ready(), "database": database,
                         "redis": redis_status, "model_server": model})

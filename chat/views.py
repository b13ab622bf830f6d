from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.utils.html import escape

from domains.models import Domain


def health(request):
    """Database status as JSON; 503 when the database does not answer."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            row = cursor.fetchone()
        database = {"ok": True, "pgvector": row[0] if row else None}
    except Exception as exc:  # any driver error means "down" here
        return JsonResponse({"database": {"ok": False, "error": str(exc)}}, status=503)
    return JsonResponse({"database": database})


def home(request):
    names = escape(", ".join(Domain.objects.filter(active=True).values_list("name", flat=True)) or "none yet")
    return HttpResponse(
        "<!doctype html><title>Klea</title><h1>Klea RAG server</h1>"
        f"<p>Domains: {names}. Ask with <code>manage.py ask \"...\"</code>; manage in "
        '<a href="/admin/">the admin</a>.</p>'
    )

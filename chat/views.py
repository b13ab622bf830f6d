"""The chat page (``/``): the UI is chat/static/chat/chat.js over the websocket and the API;
the API tokens page (``/tokens/``)."""

from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import redirect, render
from django.views.decorators.csrf import ensure_csrf_cookie

from domains.access import may_chat

from . import tokens
from .models import ApiToken


@ensure_csrf_cookie  # chat.js sends it back in X-CSRFToken
def home(request):
    if not may_chat(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "chat/index.html", {"public": not request.user.is_authenticated})


@login_required
def api_tokens(request):
    """``/tokens/``: the signed-in user's personal API tokens (docs/clients.md).

    POST ``action=create`` with ``name`` creates one and shows it once on the page;
    POST ``action=revoke`` with ``token`` (an id of the user's own) revokes it.
    """
    new_token = error = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            try:
                row, new_token = tokens.create_token(request.user, request.POST.get("name", ""))
            except ValueError as exc:
                error = str(exc)
        elif action == "revoke":
            row = ApiToken.objects.filter(user=request.user, pk=_int(request.POST.get("token"))).first()
            if row is None:
                error = "no such token"
            else:
                tokens.revoke(row)
                return redirect("api-tokens")
        else:
            error = "unknown action"
    rows = ApiToken.objects.filter(user=request.user).order_by("-created_at", "-id")
    response = render(request, "chat/tokens.html", {"tokens": rows, "new_token": new_token, "error": error})
    if new_token:
        response["Cache-Control"] = "no-store"  # the one page that shows the token
    return response


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None

"""The chat page (``/``): the UI is chat/static/chat/chat.js over the websocket and the API;
the API tokens page (``/tokens/``)."""

from django.conf import settings
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
    return render(request, "chat/index.html", {"public": not request.user.is_authenticated,
                                               "max_question_chars": settings.KLEA_MAX_QUESTION_CHARS})


# The new token waits here (server side) between the POST that made it and the page that
# shows it once: Post/Redirect/Get, so a reload never makes a second token.
NEW_TOKEN_KEY = "klea_new_api_token"


@login_required
def api_tokens(request):
    """``/tokens/``: the signed-in user's personal API tokens (docs/clients.md).

    POST ``action=create`` with ``name`` creates one and redirects to the page, which
    shows it once; POST ``action=revoke`` with ``token`` (an id of the user's own)
    revokes it. A bad POST shows the page with the error.
    """
    error = ""
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create":
            try:
                _, request.session[NEW_TOKEN_KEY] = tokens.create_token(request.user, request.POST.get("name", ""))
                return redirect("api-tokens")
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
    new_token = request.session.pop(NEW_TOKEN_KEY, "")
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

"""The chat page (``/``): the UI is chat/static/chat/chat.js over the websocket and the API."""

from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from domains.access import may_chat


@ensure_csrf_cookie  # chat.js sends it back in X-CSRFToken
def home(request):
    if not may_chat(request.user):
        return redirect_to_login(request.get_full_path())
    return render(request, "chat/index.html", {"public": not request.user.is_authenticated})

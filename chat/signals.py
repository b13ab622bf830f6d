"""Signal handlers of the chat app (connected in apps.py)."""

from __future__ import annotations

from django.contrib import messages


SIGNED_OUT = "You are signed out."


def say_signed_out(sender, request, user, **kwargs) -> None:
    """``user_logged_out``: the sign-in page it lands on (LOGOUT_REDIRECT_URL) says so,
    rather than asking to sign in as if the session had expired."""
    if request is not None:
        messages.info(request, SIGNED_OUT, fail_silently=True)  # no message middleware: nothing said


def close_sockets_on_logout(sender, request, user, **kwargs) -> None:
    """``user_logged_out``: close this process's chat sockets of the session signing out
    (sent before Django flushes the session, so its key is still known)."""
    from .consumers import close_signed_out  # the consumer module loads the pipeline

    session = getattr(request, "session", None)
    close_signed_out(session.session_key if session is not None else None)

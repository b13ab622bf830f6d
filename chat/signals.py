"""Signal handlers of the chat app (connected in apps.py)."""

from __future__ import annotations


def close_sockets_on_logout(sender, request, user, **kwargs) -> None:
    """``user_logged_out``: close this process's chat sockets of the session signing out
    (sent before Django flushes the session, so its key is still known)."""
    from .consumers import close_signed_out  # the consumer module loads the pipeline

    session = getattr(request, "session", None)
    close_signed_out(session.session_key if session is not None else None)

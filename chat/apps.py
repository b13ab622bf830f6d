from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from . import checks  # noqa: F401  (registers the system checks)
        from .signals import close_sockets_on_logout

        user_logged_out.connect(close_sockets_on_logout, dispatch_uid="chat.close_sockets_on_logout")

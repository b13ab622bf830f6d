from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed

        from . import checks  # noqa: F401  (registers the system checks)
        from .login_throttle import clear_on_sign_in, record_failed_sign_in
        from .signals import close_sockets_on_logout, say_signed_out

        user_logged_out.connect(close_sockets_on_logout, dispatch_uid="chat.close_sockets_on_logout")
        user_logged_out.connect(say_signed_out, dispatch_uid="chat.say_signed_out")
        user_login_failed.connect(record_failed_sign_in, dispatch_uid="chat.record_failed_sign_in")
        user_logged_in.connect(clear_on_sign_in, dispatch_uid="chat.clear_on_sign_in")

"""Websocket routes: the chat consumer (protocol in docs/api.md)."""

from django.urls import path

from .consumers import ChatConsumer

websocket_urlpatterns: list = [
    path("ws/chat/", ChatConsumer.as_asgi()),
]

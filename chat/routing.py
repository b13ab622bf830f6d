"""Websocket routes (the chat consumer comes with the chat UI)."""

websocket_urlpatterns: list = []

from django.urls import path, re_path

from . import api, health, openai_server, source_view, views

urlpatterns = [
    path("", views.home, name="home"),
    path("health", health.health, name="health"),
    path("tokens/", views.api_tokens, name="api-tokens"),
    path("api/query", api.query, name="api-query"),
    path("api/domains", api.domains, name="api-domains"),
    path("api/sessions", api.session_list, name="api-sessions"),
    path("api/sessions/<int:session_id>", api.session_detail, name="api-session"),
    path("api/sessions/<int:session_id>/messages", api.session_messages, name="api-session-messages"),
    # The source view (docs/api.md, "The source view")
    path("api/chunks/<int:chunk_id>/source", source_view.chunk_source, name="api-chunk-source"),
    path("api/documents/<int:document_id>/source", source_view.document_source, name="api-document-source"),
    path("api/documents/<int:document_id>/pages/<int:page>", source_view.document_page, name="api-document-page"),
    path("api/documents/<int:document_id>/file", source_view.document_file, name="api-document-file"),
    re_path(r"^api/", api.not_found, name="api-not-found"),  # after ingestion's api/ (klea_site/urls.py)
    # The OpenAI-compatible endpoint (docs/clients.md)
    path("v1/models", openai_server.models, name="v1-models"),
    path("v1/models/<path:model_id>", openai_server.models, name="v1-model"),
    path("v1/chat/completions", openai_server.chat_completions, name="v1-chat-completions"),
    re_path(r"^v1/", openai_server.not_found, name="v1-not-found"),
]

from django.urls import path

from . import api, health, views

urlpatterns = [
    path("", views.home, name="home"),
    path("health", health.health, name="health"),
    path("api/query", api.query, name="api-query"),
    path("api/domains", api.domains, name="api-domains"),
    path("api/sessions", api.session_list, name="api-sessions"),
    path("api/sessions/<int:session_id>", api.session_detail, name="api-session"),
    path("api/sessions/<int:session_id>/messages", api.session_messages, name="api-session-messages"),
]

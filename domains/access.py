"""Who may query which domain: the one place chat, the websocket and the HTTP API ask.

A domain with no ``allowed_groups`` is open to everyone allowed to chat (signed-in
users; anonymous visitors too when ``KLEA_CHAT_PUBLIC`` is on). A domain with groups is
open to members of any of them and to superusers. Inactive domains are never queryable.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.db.models import Q, QuerySet

from .models import Domain


class UnknownDomain(Exception):
    """A requested domain name the user may not query, or that does not exist (the
    message is the same for both, so it reveals nothing)."""

    code = "unknown_domain"

    def __init__(self, name: str):
        super().__init__(f"no domain named {name!r} is available to you")
        self.name = name


def may_chat(user) -> bool:
    """Signed-in active users always; anonymous visitors when KLEA_CHAT_PUBLIC is set."""
    if user is not None and user.is_authenticated:
        return user.is_active
    return bool(settings.KLEA_CHAT_PUBLIC)


def queryable_domains(user) -> QuerySet[Domain]:
    """The active domains ``user`` (a User or AnonymousUser) may query, by name.

    :returns: a Domain QuerySet (empty when the user may not chat at all).
    """
    active = Domain.objects.filter(active=True).order_by("name")
    if not may_chat(user):
        return active.none()
    if user is not None and user.is_authenticated and user.is_superuser:
        return active
    if user is None or not user.is_authenticated:
        return active.filter(allowed_groups__isnull=True)
    member = Domain.objects.filter(allowed_groups__in=user.groups.all()).values("pk")
    return active.filter(Q(allowed_groups__isnull=True) | Q(pk__in=member)).distinct()


def managed_domains(user) -> QuerySet[Domain]:
    """The domains (active or not) whose stores an active staff user may see and fill:
    ingestion job pages, ``/api/jobs/<id>``, admin uploads. All for superusers; for other
    staff, the domains open to everyone and those of their groups, as for querying.

    :returns: a Domain QuerySet (empty for anyone but active staff).
    """
    if user is None or not user.is_authenticated or not user.is_active or not user.is_staff:
        return Domain.objects.none()
    if user.is_superuser:
        return Domain.objects.all()
    member = Domain.objects.filter(allowed_groups__in=user.groups.all()).values("pk")
    return Domain.objects.filter(Q(allowed_groups__isnull=True) | Q(pk__in=member)).distinct()


def pick_domains(user, names: Iterable[str] | None) -> tuple[list[Domain], list[str] | None]:
    """The turn's domains: everything ``user`` may query, and the user's own pick.

    :param names: requested domain names, or None (the classifier chooses).
    :returns: ``(allowed, pick)``: all queryable domains, and the requested names (None
        when none were requested).
    :raises UnknownDomain: a requested name that is unknown or not queryable by ``user``.
    """
    allowed = list(queryable_domains(user))
    if names is None:
        return allowed, None
    by_name = {d.name: d for d in allowed}
    pick = []
    for name in names:
        if name not in by_name:
            raise UnknownDomain(name)
        if name not in pick:
            pick.append(name)
    return allowed, pick or None


def domain_list(user) -> list[dict]:
    """The domains ``user`` may query as the clients see them (``GET /api/domains``, the
    MCP server's ``list_domains``): ``[{"name", "description", "examples": [question],
    "filter_fields": [{"name", "value_type", "description"}]}]`` by name."""
    rows = queryable_domains(user).prefetch_related("filter_fields")
    return [
        {
            "name": d.name,
            "description": d.description,
            "examples": d.example_questions,
            "filter_fields": [
                {"name": f.name, "value_type": f.value_type, "description": f.description}
                for f in d.filter_fields.all()
            ],
        }
        for d in rows
    ]

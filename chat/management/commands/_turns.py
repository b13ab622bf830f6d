"""Shared by ``ask`` and ``chat``: domain arguments and running one turn with printing."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.core.management.base import CommandError

from chat.backends import get_backend
from chat.console import EventPrinter
from chat.pipeline import TurnRequest, TurnResult, run_turn
from domains.models import Domain


def allowed_domains(picked: list[str] | None) -> tuple[list[Domain], list[str] | None]:
    """Active domains (the command line may query them all) and the validated picks.

    :raises CommandError: a picked domain that does not exist or is inactive.
    """
    active = list(Domain.objects.filter(active=True))
    names = {d.name for d in active}
    for name in picked or []:
        if name not in names:
            known = ", ".join(sorted(names)) or "none"
            raise CommandError(f"domain '{name}' does not exist or is inactive (active: {known})")
    return active, picked or None


def run_and_print(request: TurnRequest, printer: EventPrinter | None, backend_name: str | None) -> TurnResult:
    """Run one turn, printing events as they come. :returns: all events."""
    try:
        backend = get_backend(backend_name)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    result = TurnResult()

    async def main() -> None:
        async for event in run_turn(request, backend=backend):
            result.events.append(event)
            if printer:
                printer(event)

    async_to_sync(main)()
    return result

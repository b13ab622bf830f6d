import asyncio

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chat import mcp_server
from chat.mcp_stdio import run_stdio


class Command(BaseCommand):
    help = (
        "Serve Klea's MCP tools (list_domains, search, ask) over stdio, acting as --user "
        "(that user's domains). For MCP clients that start their servers as commands "
        "(docs/clients.md). Standard output carries the protocol only."
    )

    def add_arguments(self, parser):
        parser.add_argument("--user", required=True, metavar="USERNAME", help="Act as this user.")

    def handle(self, *args, user, **options):
        try:
            account = get_user_model().objects.get_by_natural_key(user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {user!r}") from None
        if not account.is_active:
            raise CommandError(f"user {user!r} is inactive")
        mcp_server.stdio_user.set(account)
        asyncio.run(run_stdio())

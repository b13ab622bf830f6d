from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from chat import tokens
from chat.models import ApiToken


class Command(BaseCommand):
    help = (
        "Personal API tokens (docs/clients.md): `create USERNAME --name NAME` prints a new token "
        "(shown once), `list [USERNAME]` lists tokens, `revoke ID` revokes one."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True, metavar="{create,list,revoke}")
        create = sub.add_parser("create", help="Create a token for USERNAME and print it (only once).")
        create.add_argument("username")
        create.add_argument("--name", required=True, help="What the token is for, e.g. open-webui.")
        listing = sub.add_parser("list", help="One line per token: id, user, name, prefix, created, last used, state.")
        listing.add_argument("username", nargs="?", help="Only this user's tokens.")
        revoke = sub.add_parser("revoke", help="Revoke the token with this id (from `list`).")
        revoke.add_argument("token_id", type=int)

    def handle(self, *args, action, **options):
        getattr(self, f"do_{action}")(**options)

    def _user(self, username: str):
        try:
            return get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"no user named {username!r}") from None

    def do_create(self, username, name, **options):
        user = self._user(username)
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive: a token of theirs would be refused")
        try:
            row, token = tokens.create_token(user, name)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Token {row.pk} ({row.name}) for {username}; it is shown only now:")
        self.stdout.write(token)

    def do_list(self, username=None, **options):
        rows = ApiToken.objects.select_related("user").order_by("id")
        if username:
            rows = rows.filter(user=self._user(username))
        for row in rows:
            last = row.last_used_at.isoformat(timespec="seconds") if row.last_used_at else "never"
            state = f"revoked {row.revoked_at.isoformat(timespec='seconds')}" if row.revoked_at else "active"
            self.stdout.write(f"{row.pk}\t{row.user.get_username()}\t{row.name}\t{row.prefix}…\t"
                              f"created {row.created_at.isoformat(timespec='seconds')}\tlast used {last}\t{state}")

    def do_revoke(self, token_id, **options):
        try:
            row = ApiToken.objects.get(pk=token_id)
        except ApiToken.DoesNotExist:
            raise CommandError(f"no token with id {token_id}") from None
        if not tokens.revoke(row):
            raise CommandError(f"token {token_id} was already revoked")
        self.stdout.write(f"Revoked token {token_id} ({row.name}) of {row.user.get_username()}.")

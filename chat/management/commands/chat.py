import sys

from django.core.management.base import BaseCommand, CommandError

from chat.backends import BACKENDS
from chat.console import EventPrinter, timing_lines
from chat.models import ChatSession
from chat.pipeline import TurnRequest
from domains.text import blank

from ._turns import allowed_domains, run_and_print

PROMPT = "you> "
HELP = "Commands: /new (new session), /quit (or an empty line at end of input)."


class Command(BaseCommand):
    help = "Chat in the terminal: each line is a question answered by the full pipeline, with memory."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument(
            "--domain", action="append", dest="domains", metavar="NAME",
            help="Answer from this domain (repeatable); default: classify each question.",
        )
        parser.add_argument("--session", type=int, metavar="ID", help="Continue this chat session.")
        parser.add_argument("--backend", choices=BACKENDS, help="Override KLEA_LLM_BACKEND.")
        parser.add_argument("--timings", action="store_true", help="Print the per-node time breakdown.")
        parser.add_argument("--quiet", action="store_true", help="No stage lines.")

    def handle(self, *args, domains, session, backend, timings, quiet, **options):
        stdin = options.get("stdin") or sys.stdin
        allowed, picked = allowed_domains(domains)
        if session is None:
            session = ChatSession.objects.create(title="").pk
        elif not ChatSession.objects.filter(pk=session).exists():
            raise CommandError(f"chat session {session} does not exist")
        self.stdout.write(f"Session {session}. {HELP}")
        printer = EventPrinter(
            lambda text: self.stdout.write(text, ending=""),
            lambda text: self.stderr.write(text, ending=""),
            quiet=quiet,
        )
        while True:
            self.stdout.write(PROMPT, ending="")
            self.stdout.flush()
            line = stdin.readline()
            if not line:
                self.stdout.write("")
                return
            question = line.strip()
            if question in ("/quit", "/exit"):
                return
            if question == "/new":
                session = ChatSession.objects.create(title="").pk
                self.stdout.write(f"Session {session}.")
                continue
            if blank(question):  # nothing visible (spaces, zero-width characters): ask again
                continue
            request = TurnRequest(question, domains=allowed, session_id=session, pick=picked,
                                  pick_hint="Start the chat with --domain NAME to ask one directly.")
            result = run_and_print(request, printer, backend)
            if timings and result.done:
                self.stdout.write("\n".join(timing_lines(result.done)))

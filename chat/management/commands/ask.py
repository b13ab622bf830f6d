import json

from django.core.management.base import BaseCommand, CommandError

from chat.backends import BACKENDS
from chat.console import EventPrinter, timing_lines
from chat.pipeline import TurnRequest
from domains.text import blank

from ._turns import allowed_domains, run_and_print


class Command(BaseCommand):
    help = (
        "Ask one question through the full pipeline; prints the stages, the streamed answer "
        "with numbered citations and the reference list."
    )

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument(
            "--domain", action="append", dest="domains", metavar="NAME",
            help="Answer from this domain (repeatable); default: classify the question.",
        )
        parser.add_argument("--session", type=int, metavar="ID", help="Continue this chat session (memory).")
        parser.add_argument("--backend", choices=BACKENDS, help="Override KLEA_LLM_BACKEND.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the final result as JSON.")
        parser.add_argument("--events", action="store_true", help="Print every event as one JSON line.")
        parser.add_argument("--timings", action="store_true", help="Print the per-node time breakdown.")
        parser.add_argument("--quiet", action="store_true", help="No stage lines.")

    def handle(self, *args, question, domains, session, backend, as_json, events, timings, quiet, **options):
        if blank(question):
            raise CommandError("the question is empty")
        allowed, picked = allowed_domains(domains)
        if session is not None:
            from chat.models import ChatSession

            if not ChatSession.objects.filter(pk=session).exists():
                raise CommandError(f"chat session {session} does not exist")
        printer = None
        if not (as_json or events):
            printer = EventPrinter(
                lambda text: self.stdout.write(text, ending=""),
                lambda text: self.stderr.write(text, ending=""),
                quiet=quiet,
                show_fatal=False,  # raised as CommandError below
            )
        request = TurnRequest(question, domains=allowed, session_id=session, pick=picked,
                              pick_hint="Pass --domain NAME to ask one directly.")
        result = run_and_print(request, printer, backend)
        if events:
            for event in result.events:
                self.stdout.write(json.dumps(event.as_dict(), ensure_ascii=False))
        elif as_json:
            answer = result.answer
            payload = {
                "question": question,
                "route": answer.route if answer else None,
                "domains": answer.domains if answer else [],
                "answer": answer.text if answer else "",
                "warnings": answer.warnings if answer else [],
                "evaluation": answer.evaluation if answer else {},
                "references": result.references,
                "errors": [e.as_dict() for e in result.errors],
                "timings": result.done.timings,
                "cpu_ms": result.done.cpu_ms,
                "ttft_ms": result.done.ttft_ms,
            }
            self.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False))
        if timings:
            self.stdout.write("\n".join(timing_lines(result.done)))
        if result.done.status != "complete":
            error = result.errors[-1] if result.errors else None
            raise CommandError(f"{error.code}: {error.message}" if error else f"turn {result.done.status}")

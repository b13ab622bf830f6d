import json

from django.core.management.base import BaseCommand, CommandError

from chat.answering import answer_question
from domains.models import Domain


class Command(BaseCommand):
    help = "Ask a question; prints the answer with numbered citations and the reference list."

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument(
            "--domain", action="append", dest="domains", metavar="NAME",
            help="Answer from this domain (repeatable); default: classify the question.",
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the answer as JSON.")

    def handle(self, *args, question, domains, as_json, **options):
        if not question.strip():
            raise CommandError("the question is empty")
        selected = None
        if domains:
            selected = list(Domain.objects.filter(name__in=domains))
            missing = sorted(set(domains) - {d.name for d in selected})
            if missing:
                known = ", ".join(Domain.objects.values_list("name", flat=True)) or "none"
                raise CommandError(f"domain '{missing[0]}' does not exist (known: {known})")
        answer = answer_question(question, selected)
        if as_json:
            payload = {
                "question": answer.question,
                "route": answer.route,
                "domains": answer.domains,
                "answer": answer.text,
                "references": [r.as_dict() for r in answer.references],
            }
            self.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False))
            return
        self.stdout.write(answer.text)
        if answer.references:
            self.stdout.write("\nReferences")
            for ref in answer.references:
                chain = " > ".join(ref.headings)
                line = f"[{ref.number}] {ref.file_name}"
                if chain:
                    line += f" — {chain}"
                self.stdout.write(line)
                details = [f"title: {ref.title}"] if ref.title else []
                if ref.url:
                    details.append(f"url: {ref.url}")
                details.append(f"domain: {ref.domain}, store: {ref.store}")
                self.stdout.write("    " + " | ".join(details))

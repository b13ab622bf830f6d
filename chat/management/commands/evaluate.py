import json

from django.core.management.base import BaseCommand, CommandError

from chat.backends import BACKENDS
from chat.scoring import QuestionFileError, evaluate, load_questions
from domains.models import Domain


class Command(BaseCommand):
    help = (
        "Ask the questions of QUESTIONS.json files through the full pipeline and report, per "
        "domain and overall: routed right, evidence in answer, file cited, evidence in references, "
        "median answer length, time to first token, off-topic refused (docs/evaluation.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="QUESTIONS.json", help="Question file(s).")
        parser.add_argument(
            "--domain", action="append", dest="only", metavar="NAME",
            help="Only the questions of this domain (repeatable); routing still sees every active domain.",
        )
        parser.add_argument("--backend", choices=BACKENDS, help="Override KLEA_LLM_BACKEND.")
        parser.add_argument("--json", action="store_true", dest="as_json",
                            help="Print the summaries and every scored question as JSON.")

    def handle(self, *args, files, only, backend, as_json, verbosity, **options):
        questions, problems = [], []
        for path in files:
            try:
                questions += load_questions(path)
            except QuestionFileError as exc:
                problems.append(str(exc))
        if problems:
            raise CommandError("bad question file(s):\n" + "\n".join(problems))
        if only:
            named = {q.domain for q in questions}
            unknown = [name for name in only if name not in named]
            if unknown:
                raise CommandError(f"no question of domain(s) {', '.join(unknown)} in {', '.join(files)}")
            questions = [q for q in questions if q.domain in only]
        domains = list(Domain.objects.filter(active=True))

        def progress(position, scored):
            if verbosity >= 2 and not as_json:
                self.stderr.write(f"{position}/{len(questions)} {scored.domain or 'off-topic'}: "
                                  f"{scored.question!r}: {scored.outcome()}")

        try:
            report = evaluate(questions, domains, backend=backend, on_scored=progress)
        except QuestionFileError as exc:
            raise CommandError(f"questions that cannot be scored here:\n{exc}") from None
        if as_json:
            self.stdout.write(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        else:
            self.stdout.write("\n".join(report.lines()))

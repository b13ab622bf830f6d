"""Answer-quality scoring of the question pipeline: ``manage.py evaluate`` (docs/evaluation.md).

    from chat.scoring import evaluate, load_questions
    report = evaluate(load_questions("questions.json"), domains)
    print("\\n".join(report.lines()))
"""

from .metrics import EVIDENCE_COVERAGE, Scored, Summary, coverage, percentile, score_turn, summarise, words
from .questions import Question, QuestionFileError, load_questions, parse_questions
from .run import Report, check_against_database, evaluate

__all__ = [
    "EVIDENCE_COVERAGE",
    "Question",
    "QuestionFileError",
    "Report",
    "Scored",
    "Summary",
    "check_against_database",
    "coverage",
    "evaluate",
    "load_questions",
    "parse_questions",
    "percentile",
    "score_turn",
    "summarise",
    "words",
]

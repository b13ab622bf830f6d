"""Model-free routing: a question goes to the domains whose sources match it.

Each domain's score weighs two kinds of evidence from its own sources (probed per
domain through :mod:`domains.retrieval.probe`): dense, the cosine similarity of the
question to the domain's nearest chunk (or to its description, if higher), and lexical,
the idf-weighted share of the question's words that one of its best BM25 chunks holds
(an off-topic question shares a common word or two with a large corpus, rarely its
rare ones), counted from its body text (:func:`.text.body_text`: not a paper's affiliations or
reference entries, where "capital" and "Australia" or "Africa" and "country" meet by
chance) and in proportion to that chunk's own cosine to the question up to LEXICAL_NEAR
(the words must come from a passage near the question in meaning).
score = (dense + LEXICAL_WEIGHT x lexical) / (1 + LEXICAL_WEIGHT), in [-1, 1].
A domain is routed when its score reaches CLASSIFY_THRESHOLD; domains within
CLASSIFY_MARGIN of the best one are routed too (multi-domain questions).

A generic question about "this" ("What is this?", "What does this project do?") names
nothing a source could match; with a single domain it can only mean that one, so it is
routed there (:func:`is_generic`).

A question may name what only a domain's description or its documents' metadata names
(an author, a year: "What problem does Dijkstra solve in his 1965 paper?"): a chunk's
lexical share counts its document's metadata (title, authors, journal, year, file name)
and the domain's name and description words (:func:`described`) as held, and a domain's
lexical evidence is at least its best-matching document's share
(:func:`domains.retrieval.document_coverage`, metadata and description words).
A bibliographic question ("Who wrote ...?", "When was ... published?", :mod:`.biblio`)
counts only the words naming its document for that, and its dense evidence is at least
the cosine of the question to that document's reference line.

A question asking what an acronym stands for ("What does the acronym COMBINE stand
for?") is answered by the domain whose sources spell it out
(:func:`domains.retrieval.acronym_definitions`): that domain's lexical evidence is 1.0.
Its other words ("acronym", "stand") match sources at random, and the uncased embedding
reads an acronym that is also a word (COMBINE) as the word.

A listing question ("Which fusion methods are available?", :data:`.shapes.LISTING`)
counts only its subject's words: the list that answers names the things (RRF, convex),
rarely with its frame's words ("available", "methods", :data:`LISTING_FRAME`).

A question in another language (:func:`domains.retrieval.lexemes_and_language`, by its stop words)
shares few words with English sources, and each word no source uses would count against
it: its lexical evidence counts only the words some source of the domains uses
(:func:`domains.retrieval.lexemes_in_use`: names, numbers, loanwords).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from domains import embeddings
from domains.models import Document
from domains.retrieval import (acronym_definitions, asked_acronym, content_words, document_coverage, lexemes_and_language,
                               lexemes_in_use, lexical_coverage, nearest_chunk_similarity, query_lexemes)

from . import biblio
from .shapes import LISTING, is_generic
from .text import body_text

# Measured with bench/routing.py (docs/benchmarks.md, "Routing alone"): 314 in-domain
# questions (the answer sets and terse.json: "How do I upgrade it?", "rolling window") and
# 65 off-topic ones, each routed against four domains and against each domain alone.
# Off-topic questions reach a lexical share of about 0.6 at most (a common word or two of a
# large corpus), in-domain ones mostly 1.0, while dense evidence overlaps (off-topic up to
# 0.46, in-domain down to 0.19 for a question naming its subject "it"): weighing lexical 0.5
# (was 0.25) and routing from 0.40 (was 0.38) refuses 3 -> 1 answerable questions (own domain
# alone: 5 -> 2) and accepts 3 -> 1 off-topic ones (each domain alone: 4 -> 2 of 260); the
# first and second sets chose it (a tie there), the third sets, terse and off-topic-2 checked.
LEXICAL_WEIGHT = 0.5
CLASSIFY_THRESHOLD = 0.40
CLASSIFY_MARGIN = 0.03
# A chunk's lexical share counts whole from this cosine to the question, in proportion
# below it (domains.retrieval.lexical_coverage, ``near``). With five domains (a papers
# domain of 22 PDFs) off-topic questions took their words from chunks far from them in
# meaning: affiliation lists ("capital" and "Australia", cosine 0.09; also left out as
# front matter), a results paragraph ("Table" and "excellent", 0.06), a sign-in section
# ("clear" and "cache", 0.02). Answerable questions mostly take theirs from chunks at 0.19
# and above, but a long one may find them in a chunk whose embedding is about something
# else (an FAQ answer holding four of five words at 0.05, a chunk at 0.11 beside it), so
# the floor is low: 0.15 refused that question, 0.10 none of 506 (bench/routing.py, with
# the body text: off-topic accepted 7 -> 2 of 65; docs/benchmarks.md, "Words from the body
# of a passage near the question").
LEXICAL_NEAR = 0.10


@dataclass(frozen=True)
class DomainScore:
    domain: object  # domains.models.Domain
    score: float


def score_domains(query_vector: np.ndarray, domains: Sequence, question: str) -> list[DomainScore]:
    """Each domain's evidence score (see the module docstring).

    :param query_vector: the question's embedding, shape (384,), L2-normalised.
    :returns: one DomainScore per domain, best first.
    """
    if not domains:
        return []
    nearest = nearest_chunk_similarity(query_vector, domains)
    lexemes, asked_in = lexemes_and_language(question)
    known = {domain.id: described(domain) for domain in domains}
    if asked_in != "english":
        # Its words are not the sources' words: what evidence there is lies in the names,
        # numbers and loanwords they share ("Wie wählt Raft einen Anführer?": "Raft"),
        # never in its own language's small words ("die", "von").
        lexemes = lexemes_in_use(query_lexemes(content_words(question, asked_in)), domains, known)
    elif LISTING.search(question):
        lexemes = [t for t in lexemes if t not in listing_frame()] or lexemes
    lexical = lexical_coverage(lexemes, domains, known=known, query_vector=query_vector, near=LEXICAL_NEAR,
                               body=body_text)
    if acronym := asked_acronym(question):
        for domain in domains:
            if any(acronym_definitions(acronym, store.id, 1) for store in domain.stores.all()):
                lexical[domain.id] = 1.0
    if biblio.asked_fields(question):
        naming = [t for t in lexemes if t not in biblio.field_lexemes()]
        _count_documents(query_vector, domains, naming, nearest, lexical, known, dense=True)
    else:
        _count_documents(query_vector, domains, lexemes, nearest, lexical, known, dense=False)
    descriptions = embeddings.embed_cached([f"{d.name}: {d.description}" for d in domains]) @ query_vector
    scores = []
    for domain, description in zip(domains, descriptions):
        description = float(description)
        dense = max(description, nearest.get(domain.id, -1.0))
        score = (dense + LEXICAL_WEIGHT * lexical.get(domain.id, 0.0)) / (1 + LEXICAL_WEIGHT)
        scores.append(DomainScore(domain, score))
    return sorted(scores, key=lambda s: -s.score)


# A listing question's frame ("Which fusion methods are available?"): the predicate asking
# what exists and the head noun naming a kind of thing. The list that answers names the
# things (RRF, convex) and rarely says "available" or "methods" beside them, so these words
# would weigh as missing from it; the subject ("fusion") is what a source must hold.
LISTING_FRAME = ("available exist exists supported support included include needed method methods option options "
                 "kind kinds type types sort sorts way ways")


@lru_cache(maxsize=1)
def listing_frame() -> frozenset[str]:
    """LISTING_FRAME as search lexemes (the database's stemming)."""
    return frozenset(query_lexemes(LISTING_FRAME))


def described(domain) -> frozenset[str]:
    """The lexemes of a domain's name and description (what it says it is about)."""
    return _lexemes(f"{domain.name} {domain.description}")


@lru_cache(maxsize=256)
def _lexemes(text: str) -> frozenset[str]:
    return frozenset(query_lexemes(text))


def _count_documents(query_vector: np.ndarray, domains: Sequence, naming: list[str], nearest: dict,
                     lexical: dict, known: dict, dense: bool) -> None:
    """Raise each domain's lexical evidence (in place) to that of its document whose
    metadata (with the domain's ``known`` lexemes) best matches the question's ``naming``
    lexemes; with ``dense``, its dense evidence too, to the cosine of the question to
    that document's reference line."""
    found = document_coverage(naming, domains, known)
    for domain_id, (share, _) in found.items():
        lexical[domain_id] = max(lexical.get(domain_id, 0.0), share)
    if not found or not dense:
        return
    metadata = dict(Document.objects.filter(id__in=[d for _, d in found.values()]).values_list("id", "metadata"))
    lines = {domain_id: biblio.reference_line(metadata.get(document_id) or {})
             for domain_id, (_, document_id) in found.items()}
    lines = {domain_id: line for domain_id, line in lines.items() if line}
    cosines = embeddings.embed_cached(list(lines.values())) @ query_vector if lines else []
    for domain_id, cosine in zip(lines, cosines):
        nearest[domain_id] = max(nearest.get(domain_id, -1.0), float(cosine))


def classify(query_vector: np.ndarray, domains: Sequence, question: str) -> list[DomainScore]:
    """The domains the question belongs to, best first; [] means "undefined"."""
    scores = score_domains(query_vector, domains, question)
    if len(scores) == 1 and is_generic(question):
        return scores
    if not scores or scores[0].score < CLASSIFY_THRESHOLD:
        return []
    top = scores[0].score
    return [s for s in scores if s.score >= max(CLASSIFY_THRESHOLD, top - CLASSIFY_MARGIN)]

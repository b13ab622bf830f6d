"""Helpers of the extractive backend's tests: sources as the pipeline hands them over,
and the answer the backend composes from them (real embeddings, markers "[n]")."""

from __future__ import annotations

from types import SimpleNamespace

from asgiref.sync import async_to_sync

from chat.backends.extractive.passages import Composer
from domains import embeddings


def source(number: int, text: str, headings=(), score: float = 0.5, file_name: str = "doc.md"):
    """A numbered source of one chunk (``score`` its retrieval score in [0, 1])."""
    chunk = SimpleNamespace(text=text, headings=list(headings), score=score)
    return SimpleNamespace(number=number, file_name=file_name, chunks=[chunk])


def answer(question: str, *sources) -> str:
    """The backend's answer to ``question`` from ``sources``, each cited as "[n]"."""
    return answer_citing(question, *sources)[0]


def answer_citing(question: str, *sources) -> tuple[str, list[list[int | None]]]:
    """:func:`answer` and, per marker in order, the chunk ids it cites (``None`` for a
    chunk given without ``chunk_id``)."""
    composer = Composer(embeddings.embed_query(question), list(sources), question)
    cited: list[list[int | None]] = []

    def cite(number, quoted=(), passages=()):
        cited.append(list(quoted))
        return f"[{number}]"

    async def collect():
        return "".join([piece async for piece in composer.pieces(cite)])

    return async_to_sync(collect)(), cited

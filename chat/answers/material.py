"""What an answer is written from: the text a model reads and the numbered sources
behind it. docs/pipeline.md, "The answer core"."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Material:
    """``text``: what a generative model reads (it cites the sources by number);
    ``sources``: numbered 1..n in order, each with a ``number``; document sources
    (:class:`domains.retrieval.Source`) also have ``chunks`` (``text``, ``score``,
    ``headings``), which the extractive backend quotes. Tool results
    (:class:`chat.pipeline.references.ToolSource`) come after the documents."""

    text: str
    sources: list = field(default_factory=list)

    def numbers(self) -> list[int]:
        return [source.number for source in self.sources]

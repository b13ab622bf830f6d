"""Clean a streamed answer on the fly: drop ``<think>`` blocks, validate citations.

The model cites sources by their numbers in the material (``[3]``, ``[1, 4]``,
``[Source 2]``). As text streams in, numbers that were not given are removed and
counted; with ``renumber`` (the chat pipeline) each cited number is renumbered in
order of first citation (the first source cited becomes [1]), so the streamed text is
already the final text and the reference list is numbered the same way; without it
(``chat.rag``, whose citations are numbered by the context before the answer) the
numbers stay as given. docs/pipeline.md, "The answer core".
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from chat.backends.structured import strip_think  # noqa: F401  (re-exported: one home)

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
# [1] [1, 2] [1; 2] [Source 3] [source document 1, 2]; at most 40 characters.
_CITATION = re.compile(r"\[(?:sources?\s*(?:documents?\s*)?)?(\d+(?:\s*[,;]\s*\d+)*)\]", re.IGNORECASE)
_CITATION_PREFIX = re.compile(r"\[(?:s(?:o(?:u(?:r(?:c(?:e(?:s)?)?)?)?)?)?\s*(?:d[a-z]*\s*)?)?[\d\s,;]*$", re.IGNORECASE)
MAX_CITATION_CHARS = 40
_TICK_RUN = re.compile(r"`+")  # `code`, ``code`` (reST) and ``` fences open and close code


class AnswerCleaner:
    """Feed raw text pieces, get clean pieces back.

    Usage::

        cleaner = AnswerCleaner(valid={1, 2, 3})
        out = cleaner.feed("<think>hm</think>Use pip [3].") + cleaner.close()
        # out == "Use pip [1]."; cleaner.cited == [3]; cleaner.dropped == 0

    :param valid: the source numbers that were given to the model.
    :param renumber: number cited sources 1..m in citation order (else keep them).
    :param labels: what :meth:`cite` writes for a source number (default: its number
        after renumbering), e.g. a ``chat.rag`` citation id.
    """

    def __init__(self, valid: Iterable[int], *, renumber: bool = True, labels: dict[int, str] | None = None):
        self.valid = set(valid)
        self.renumber = renumber
        self.labels = dict(labels or {})
        self.mapping: dict[int, int] = {}
        self.cited: list[int] = []  # original numbers, in order of first citation
        self.quoted: dict[int, list[int]] = {}  # original number -> quoted chunk ids, in order
        # original number -> one {"chunk_id", "passages"} per marker made by cite(), in order
        # (chunk_id None: the marker cites the document as a whole)
        self.markers: dict[int, list[dict]] = {}
        self.dropped = 0
        self._buffer = ""
        self._in_think = False
        self._started = False  # leading white space (after a think block) is dropped
        self._ticks = 0  # backtick runs seen: odd = inside code, where [0] is an index

    def feed(self, piece: str) -> str:
        """Clean text that can be sent now (some may be held back until it is complete)."""
        self._buffer += piece
        return self._drain(final=False)

    def close(self) -> str:
        """The rest of the text (an unfinished think block is dropped)."""
        return self._drain(final=True)

    def cite(self, original: int, quoted: Iterable[int] = (), passages: Iterable[str] = (), *,
             document: bool = False) -> str:
        """The marker for a citation made by our own code (the extractive backend), e.g.
        ``"[1]"``; registered like a parsed one. ``quoted``: the ids of the source's
        chunks the text before the marker quotes (recorded in :attr:`quoted`, so the
        marker can open that passage); ``passages``: that text, one string per passage.
        Each call also records ``{"chunk_id" (the first quoted id), "passages"}`` in
        :attr:`markers` (the k-th marker [n] opens its own chunk, at its own passage);
        with ``document`` (the text comes from the source's metadata: its authors, its
        year) ``{"chunk_id": None, "passages": []}``: the marker opens the document's top.
        :raises ValueError: a number not given."""
        number = self._number(original)
        if number is None:
            raise ValueError(f"source {original} was not given")
        quoted = [chunk_id for chunk_id in quoted if chunk_id is not None] if not document else []
        known = self.quoted.setdefault(original, [])
        known.extend(chunk_id for chunk_id in quoted if chunk_id not in known)
        if quoted or document:
            self.markers.setdefault(original, []).append(
                {"chunk_id": quoted[0] if quoted else None, "passages": list(passages) if quoted else []})
        return f"[{self.labels.get(original, number)}]"

    def _number(self, original: int) -> int | None:
        if original not in self.valid:
            self.dropped += 1
            return None
        if original not in self.mapping:
            self.mapping[original] = len(self.mapping) + 1 if self.renumber else original
            self.cited.append(original)
        return self.mapping[original]

    def _rewrite(self, match: re.Match) -> str:
        numbers = [self._number(int(n)) for n in re.split(r"\s*[,;]\s*", match.group(1).strip())]
        kept = [n for n in dict.fromkeys(numbers) if n is not None]
        return "[" + ", ".join(str(n) for n in kept) + "]" if kept else ""

    def _drain(self, final: bool) -> str:
        out: list[str] = []
        text = self._buffer
        while text:
            if self._in_think:
                end = text.find(THINK_CLOSE)
                if end < 0:
                    text = "" if final else text[-len(THINK_CLOSE):]
                    break
                text = text[end + len(THINK_CLOSE):]
                self._in_think = False
                continue
            think = text.find(THINK_OPEN)
            bracket = text.find("[")
            cut = min(i for i in (think, bracket, len(text)) if i >= 0)
            out.append(text[:cut])
            self._ticks += len(_TICK_RUN.findall(text[:cut]))
            text = text[cut:]
            if not text:
                break
            if text.startswith(THINK_OPEN):
                self._in_think = True
                text = text[len(THINK_OPEN):]
                continue
            match = _CITATION.match(text) if self._ticks % 2 == 0 else None
            if match:
                rewritten = self._rewrite(match)
                if not rewritten and out:  # "propagated [7]." -> "propagated."
                    out[-1] = out[-1].rstrip(" ")
                out.append(rewritten)
                text = text[match.end():]
                continue
            in_code = self._ticks % 2 == 1
            if not final and not in_code and len(text) < MAX_CITATION_CHARS and _CITATION_PREFIX.match(text):
                break  # maybe a citation still arriving
            out.append("[")
            text = text[1:]
        # Hold back a trailing prefix of "<think>" until we know what it is, and trailing
        # spaces (a dropped citation may follow and take them along).
        joined = "".join(out)
        if not final and not self._in_think:
            for size in range(min(len(THINK_OPEN) - 1, len(joined)), 0, -1):
                if THINK_OPEN.startswith(joined[-size:]):
                    text = joined[-size:] + text
                    joined = joined[:-size]
                    break
        if not final:  # (before a think block, held spaces end up inside it: dropped)
            kept = joined.rstrip()
            text = joined[len(kept):] + text
            joined = kept
        else:
            joined = joined.rstrip()
        self._buffer = text
        if not self._started:
            joined = joined.lstrip()
            self._started = bool(joined)
        return joined


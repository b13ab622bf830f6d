"""Readable terminal output of pipeline events (``manage.py ask`` and ``manage.py chat``)."""

from __future__ import annotations

import json
from collections.abc import Callable

from .pipeline.events import Answer, Done, Error, Event, References, Stage, Token, ToolCall
from .pipeline.references import cited_where


def _arguments(arguments) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def tool_line(event: ToolCall) -> str:
    """``· tool 1 channel_density {"channel": "Nav1.6"} (neuro-lab): ok, 54 chars`` for an end."""
    where = f" ({event.server})" if event.server else ""
    line = f"· tool {event.call} {event.tool} {_arguments(event.arguments)}{where}: {event.status}"
    if event.status == "ok":
        line += f", {event.chars} chars" + (" (cut)" if event.truncated else "")
    elif event.message:
        line += f": {event.message}"
    return line


def reference_lines(references: list[dict]) -> list[str]:
    """``[n] file — heading chain (p. 4–5)`` (``[n] tool (server) {arguments}`` for a tool result)
    then an indented details line, per reference."""
    lines = []
    for ref in references:
        if ref.get("kind") == "tool":
            lines.append(f"[{ref['number']}] {ref['title']} {_arguments(ref['arguments'])}")
            lines.append(f"    status: {ref['status']} | domain: {ref['domain']}")
            continue
        lines.append(f"[{ref['number']}] {cited_where(ref)}")
        details = [f"title: {ref['title']}"] if ref["title"] else []
        if ref["authors"]:
            details.append("authors: " + ", ".join(ref["authors"]))
        if ref["year"]:
            details.append(f"year: {ref['year']}")
        for url in ref["urls"] or ([{"label": "", "url": ref["url"]}] if ref["url"] else []):
            details.append(f"{url['label'] or 'url'}: {url['url']}")
        details.append(f"domain: {ref['domain']}, store: {ref['store']}")
        lines.append("    " + " | ".join(details))
    return lines


def timing_lines(done: Done) -> list[str]:
    """The per-node breakdown of ``--timings``: wall milliseconds, then the process's
    CPU milliseconds (on a shared machine the wall time grows with the load, the CPU
    time much less)."""
    width = max([len(node) for node in done.timings] + [len("first token")])
    lines = ["Timings (ms: wall, process CPU)"]
    lines += [f"  {node:<{width}}  {ms:>8.1f}  {done.cpu_ms.get(node, 0.0):>8.1f}" for node, ms in done.timings.items()]
    if done.ttft_ms is not None:
        lines.append(f"  {'first token':<{width}}  {done.ttft_ms:>8.1f}")
    lines.append(f"  {'total':<{width}}  {done.total_ms:>8.1f}")
    return lines


class EventPrinter:
    """Prints events as they arrive: stage lines (unless ``quiet``), the streamed answer
    (each attempt on its own line), then warnings and references, and errors.

    :param write: writes one piece of text (no newline added), e.g. ``stdout.write``
        with ``ending=""``; ``write_error`` the same for errors.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        write_error: Callable[[str], None],
        *,
        quiet: bool = False,
        show_fatal: bool = True,
    ):
        self.write = write
        self.write_error = write_error
        self.quiet = quiet
        self.show_fatal = show_fatal  # False when the caller reports the fatal error itself
        self._attempt = 0
        self._streaming = False

    def _end_stream(self) -> None:
        if self._streaming:
            self.write("\n")
            self._streaming = False

    def __call__(self, event: Event) -> None:
        if isinstance(event, Stage):
            if not self.quiet and event.phase == "end":
                self._end_stream()
                self.write(f"· {event.node}: {event.detail} ({event.elapsed_ms:.0f} ms)\n")
        elif isinstance(event, ToolCall):
            if not self.quiet and event.phase == "end":
                self._end_stream()
                self.write(tool_line(event) + "\n")
        elif isinstance(event, Token):
            if event.attempt != self._attempt:
                self._end_stream()
                self._attempt = event.attempt
            self.write(event.text)
            self._streaming = True
        elif isinstance(event, Error):
            self._end_stream()
            if event.fatal and not self.show_fatal:
                return
            self.write_error(f"error ({event.code}{', ' + event.node if event.node else ''}): {event.message}\n")
        elif isinstance(event, References):
            self._end_stream()
            self._references = event.references
        elif isinstance(event, Answer):
            self._end_stream()
            for warning in event.warnings:
                self.write(f"Warning: {warning}\n")
            refs = getattr(self, "_references", [])
            if refs:
                self.write("\nReferences\n" + "\n".join(reference_lines(refs)) + "\n")
        elif isinstance(event, Done):
            self._end_stream()

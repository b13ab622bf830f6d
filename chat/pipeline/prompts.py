"""The prompts of the generative nodes. Each function returns chat messages."""

from __future__ import annotations

from collections.abc import Sequence

from domains.models import Domain
from domains.retrieval.filters import FieldSpec

Messages = list[dict[str, str]]


def _conversation(summary: str, history: Sequence[dict]) -> str:
    parts = []
    if summary:
        parts.append(f"Summary of the earlier conversation:\n{summary}")
    if history:
        parts.append("Recent messages:\n" + "\n".join(f"{m['role']}: {m['content']}" for m in history))
    return "\n\n".join(parts)


def _with_conversation(system: str, question: str, summary: str, history: Sequence[dict]) -> Messages:
    """System prompt + one user message: the conversation so far (if any), then the question."""
    conversation = _conversation(summary, history)
    user = f"{conversation}\n\nQuestion: {question}" if conversation else f"Question: {question}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _chat_turns(system: str, question: str, summary: str, history: Sequence[dict]) -> Messages:
    """System prompt, the running summary as an acknowledged user turn, the recent
    messages as they were, then the question."""
    messages: Messages = [{"role": "system", "content": system}]
    conversation = _conversation(summary, [])
    if conversation:
        messages.append({"role": "user", "content": conversation})
        messages.append({"role": "assistant", "content": "Understood."})
    messages.extend({"role": m["role"], "content": m["content"]} for m in history)
    messages.append({"role": "user", "content": question})
    return messages


def classify(question: str, domains: Sequence[Domain], summary: str, history: Sequence[dict]) -> Messages:
    listing = "\n".join(f"- {d.name}: {d.description}" for d in domains)
    system = (
        "You decide which knowledge domains a user's question belongs to.\n"
        f"The domains:\n{listing}\n\n"
        'Reply with JSON {"query_domains": [...]}: every domain whose sources could answer the '
        'question (several when it spans several), or ["undefined"] when none fits. '
        "Use the conversation to understand follow-up questions."
    )
    return _with_conversation(system, question, summary, history)


def queries(
    question: str,
    fields: dict[str, FieldSpec],
    max_queries: int,
    summary: str,
    history: Sequence[dict],
    previous: Sequence[str] = (),
    evaluator_summary: str = "",
) -> Messages:
    system = (
        "You write search queries for a document search engine (keyword and semantic search).\n"
        f"Write 1 to {max_queries} short queries of 3 to 8 content words: one per distinct concept "
        "of the question. Resolve references to the conversation (\"it\", \"that tool\")."
    )
    if fields:
        listing = "\n".join(
            f"- {f.name} ({f.value_type}){': ' + f.description if f.description else ''}" for f in fields.values()
        )
        system += (
            "\nAlso fill `filters` only with values the question states explicitly, for these fields:\n"
            f"{listing}\n"
            "string: a value or a list (any of); int/float: a value, a list, or a range "
            '{"gte": .., "lte": ..}; list: values that must all be present. Leave out fields the '
            "question does not constrain."
        )
    parts = [_conversation(summary, history)]
    if previous:
        parts.append(
            "A previous search did not find enough. Previous queries: "
            + "; ".join(previous)
            + (f"\nThe reviewer said: {evaluator_summary}" if evaluator_summary else "")
            + "\nWrite different queries."
        )
    parts.append(f"Question: {question}")
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(p for p in parts if p)}]


def pick_tools(question: str, domains: Sequence[Domain], summary: str, history: Sequence[dict]) -> Messages:
    """The tool-choice request (the tools themselves travel as the API's ``tools``)."""
    names = ", ".join(d.name for d in domains)
    system = (
        f"You pick tools that fetch live data for a question about {names}. A separate search "
        "already looks through the documentation, so call a tool only when its live data helps "
        "answer the question, with arguments taken from the question (and the conversation). "
        "Call no tool when none helps. Do not answer the question."
    )
    return _with_conversation(system, question, summary, history)


def answer(
    question: str,
    material: str,
    source_count: int,
    instructions: Sequence[str],
    summary: str,
    history: Sequence[dict],
    previous_answer: str = "",
    evaluator_summary: str = "",
    tool_results: bool = False,
) -> Messages:
    system = (
        "Answer the user's question using only the reference material below.\n"
        f"The material has {source_count} numbered source documents. After every statement, cite "
        "the source it comes from with its number in square brackets, e.g. [1] or [2, 3]. "
        "Cite only numbers that exist. Do not write a reference list.\n"
        "If the material does not contain the answer, say what is missing. Never mention "
        "'context', 'documents' or 'reference material': talk about the subject directly."
    )
    if tool_results:
        system += (
            "\nSome sources are live results of tool calls; cite them like the others. A tool "
            "result marked as an error holds no data."
        )
    for text in instructions:
        if text.strip():
            system += f"\n{text.strip()}"
    system += f"\n\nReference material:\n{material}"
    messages = _chat_turns(system, question, summary, history)
    if previous_answer:
        messages.append({"role": "assistant", "content": previous_answer})
        messages.append(
            {
                "role": "user",
                "content": "Rewrite your answer to fix this review, keeping the citations: "
                + (evaluator_summary or "make it relevant, grounded, coherent and concise."),
            }
        )
    return messages


def evaluate(question: str, material: str, answer_text: str) -> Messages:
    system = (
        "You review an answer written from reference material. Give scores from 0 to 1:\n"
        "confidence and coverage: judged from the material (can it answer the question; how much of it);\n"
        "relevance, groundedness, coherence, conciseness: judged from the answer.\n"
        "next_step: continue (good), retrieve_more_info (material on topic but thin), "
        "modify_query (material off topic), rewrite_answer (material fine, answer poor), "
        "or undefined. summary: one sentence saying what is missing or wrong."
    )
    user = f"Question: {question}\n\nReference material:\n{material}\n\nAnswer:\n{answer_text}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def general(question: str, summary: str, history: Sequence[dict]) -> Messages:
    system = "You are a helpful assistant. Answer from your general knowledge, briefly and accurately."
    return _chat_turns(system, question, summary, history)


def summarise(summary: str, messages: Sequence[dict]) -> Messages:
    system = (
        "You keep a running summary of a conversation. Merge the new messages into the summary: "
        "keep the user's goals, facts learned and open questions; at most 200 words. "
        "Reply with the summary only."
    )
    old = f"Current summary:\n{summary}\n\n" if summary else ""
    new = "\n".join(f"{m['role']}: {m['content']}" for m in messages)
    return [{"role": "system", "content": system}, {"role": "user", "content": f"{old}New messages:\n{new}"}]

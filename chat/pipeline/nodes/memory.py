"""memory (load history, store the question), remember (store the answer), summarise
(fold old messages into the running summary). Without a session, memory takes the
history the caller gave (if any) and the other two do nothing.

The search queries are never stored: only the question and the answer enter history.
"""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from chat import memory as store
from chat.backends.base import BackendError
from chat.models import ChatMessage

from .. import prompts
from ..events import Error
from ..follow_up import search_question
from ..graph import Step, declare
from ..references import reference_list
from ..state import TurnState


async def save_assistant(state: TurnState) -> None:
    """Store the answer once (the question first); memory's close hook stores an
    interrupted or failed turn's too."""
    if state.request.session_id is None or state.assistant_message_id is not None:
        return
    await store_question(state)  # the question always comes before the answer
    state.assistant_message_id = await sync_to_async(store.add_message)(
        state.request.session_id, ChatMessage.Role.ASSISTANT, state.answer_text, **assistant_fields(state)
    )


@declare(writes={"summary", "history", "question_task", "search_text"}, close=save_assistant)
async def load_memory(state: TurnState) -> Step:
    session_id = state.request.session_id
    if session_id is None:
        if not state.request.history:
            return Step("next", "no session")
        state.history = store.recent(state.request.history, state.config.history_chars)
        chars = sum(len(m["content"]) for m in state.history)
        detail = f"{len(state.history)} messages from the caller ({chars} chars), no session"
        return Step("next", detail + _follow_up(state))
    state.summary, state.history = await sync_to_async(store.load_history)(session_id, state.config.history_chars)
    # Stored while the question is embedded and classified; remember (or this node's
    # close hook, however the turn ends) waits for it before storing the answer.
    start_storing_question(state)
    chars = sum(len(m["content"]) for m in state.history)
    detail = f"{len(state.history)} messages ({chars} chars), summary {len(state.summary)} chars"
    return Step("next", detail + _follow_up(state))


def _follow_up(state: TurnState) -> str:
    """Sets ``search_text``; a note for the stage event when the question is a follow-up."""
    state.search_text = search_question(state.question, state.history)
    return f"; follow-up, searched as: {state.search_text}" if state.search_text != state.question else ""


def assistant_fields(state: TurnState) -> dict:
    """The stored assistant message of this turn (also used for interrupted turns)."""
    return {
        "status": state.status,
        "route": state.route,
        "domains": state.domain_names,
        "references": reference_list(state.cited),
        "evaluation": state.evaluation.as_dict() if state.evaluation else {},
        "warnings": list(state.warnings),
        "error": state.error,
        "timing": {**state.timings, "ttft_ms": state.ttft_ms, "total_ms": round(state.elapsed_ms(), 1),
                   "cpu_ms": dict(state.cpu_ms)},
    }


def start_storing_question(state: TurnState) -> None:
    """Start storing the question (once) in a task of its own: cancelling the turn does
    not cancel it."""
    if state.question_task is None:
        state.question_task = asyncio.ensure_future(sync_to_async(store.add_message)(
            state.request.session_id, ChatMessage.Role.USER, state.question))


async def store_question(state: TurnState) -> None:
    """Store the question once, shielded: a turn cancelled at any point keeps it in history."""
    if state.request.session_id is None or state.user_message_id is not None:
        return
    start_storing_question(state)
    state.user_message_id = await asyncio.shield(state.question_task)


# What the stored assistant message holds (assistant_fields).
STORED = {"status", "routed", "cited", "evaluation", "warnings", "error", "answer_text"}


@declare(reads=STORED, writes={"assistant_message_id", "user_message_id", "question_task"})
async def remember(state: TurnState) -> Step:
    if state.request.session_id is None:
        return Step("next", "no session")
    await save_assistant(state)
    return Step("next", f"message {state.assistant_message_id}")


@declare(reads={"summary"})
async def summarise(state: TurnState) -> Step:
    session_id = state.request.session_id
    if session_id is None:
        return Step("next", "no session")
    older = await sync_to_async(store.messages_to_fold)(session_id, state.config.history_chars)
    if not older:
        return Step("next", "nothing to fold")
    try:
        summary = await state.backend.summarise(state.summary, older, prompts.summarise(state.summary, older))
    except BackendError as exc:  # the answer is out already: keep the old summary, fold next time
        await state.emit(Error(code=exc.code, message=exc.message, node="summarise"))
        return Step("next", f"not folded ({exc.code})")
    await sync_to_async(store.store_summary)(session_id, summary, older[-1]["id"])
    return Step("next", f"folded {len(older)} messages into the summary ({len(summary)} chars)")

"""Running one question: a :class:`Turn` is an asyncio task feeding an event queue.

Usage::

    turn = Turn(TurnRequest("How do I install pyNeuroML?", domains=allowed, session_id=7)).start()
    async for event in turn:          # ends after the Done event
        await send(event.as_dict())
    # from another task, e.g. on a "cancel" frame or a disconnect:
    turn.cancel()

Cancellation stops the model stream at once (the HTTP stream is closed, so the server
stops generating); the partial answer is stored with status "interrupted"; the stream
then ends with ``error`` (code "interrupted", fatal) and ``done`` (status "interrupted").
Backend failures (model missing, server unreachable, timeout) end the turn with one
fatal ``error`` and ``done`` (status "failed"); they are never answer text.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async

from chat.backends import get_backend
from chat.backends.base import BackendError, LLMBackend, ModelNotFound, NotSupported, Timeout, Unreachable
from domains.models import Domain
from domains.retrieval import shared_results

from .events import Answer, Done, Error, Event, References, Token
from .flow import build_graph
from .state import PipelineConfig, TurnRequest, TurnState

logger = logging.getLogger("klea.pipeline")


def load_domains(domains: Sequence[Domain]) -> list[Domain]:
    """The caller's allowed domains, active ones only, with stores and filter fields
    prefetched (a QuerySet or a list of Domain instances; ids are all that is read)."""
    ids = [d.pk for d in domains]
    return list(Domain.objects.filter(pk__in=ids, active=True).prefetch_related("stores", "filter_fields"))


class Turn:
    """One question through the pipeline, as a cancellable task and an event stream.

    :param backend: defaults to :func:`chat.backends.get_backend` (the setting).
    :param config: defaults to :meth:`PipelineConfig.from_settings`.
    """

    def __init__(
        self, request: TurnRequest, *, backend: LLMBackend | None = None, config: PipelineConfig | None = None
    ):
        self.request = request
        self.config = config or PipelineConfig.from_settings()
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self.state = TurnState(request, backend or get_backend(), self.config, self._emit)
        self.graph = build_graph(self.config)
        self._task: asyncio.Task | None = None
        self._cancelled = False
        self._running = False

    async def _emit(self, event: Event) -> None:
        if isinstance(event, Token) and self.state.ttft_ms is None:
            self.state.ttft_ms = round(self.state.elapsed_ms(), 1)
        self._queue.put_nowait(event)

    def start(self) -> Turn:
        """Start the turn in a task on the running loop. :returns: self."""
        self.state.started = time.perf_counter()
        self._task = asyncio.get_running_loop().create_task(self._main())
        return self

    def cancel(self) -> None:
        """Stop the turn (idempotent; a finished turn is left alone)."""
        if self._task is not None and not self._task.done() and not self._cancelled:
            self._cancelled = True
            if self._running:  # a task cancelled before its first step would skip _main entirely
                self._task.cancel()

    @property
    def finished(self) -> bool:
        return self._task is not None and self._task.done()

    async def wait(self) -> None:
        """Until the task is over (all events are queued by then)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self.events()

    async def events(self) -> AsyncIterator[Event]:
        """The events in order, ending with Done."""
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, Done):
                return

    async def _main(self) -> None:
        state = self.state
        self._running = True
        try:
            if self._cancelled:
                raise asyncio.CancelledError
            state.allowed = await sync_to_async(load_domains)(self.request.domains)
            with shared_results():  # the router and retrieve share the question's terms and one BM25 search
                await self.graph.run(state)
        except asyncio.CancelledError:
            state.status, state.error = "interrupted", "cancelled"
            await self._finish_failed(Error(code="interrupted", message="the turn was cancelled", node=state.node))
        except BackendError as exc:
            state.status, state.error = "failed", exc.message
            await self._finish_failed(Error(code=exc.code, message=exc.message, node=state.node))
        except Exception as exc:  # a bug: report it as an event, never hang the client
            # the text may hold paths, URLs or data: users get the type, the log the details
            logger.exception("pipeline failed in node %s", state.node)
            state.status, state.error = "failed", f"internal error ({type(exc).__name__})"
            await self._finish_failed(Error(code="internal", message=state.error, node=state.node))
        finally:
            await self.graph.close(state)  # normally a no-op by now; after a failure, done already
            try:
                await state.backend.aclose()
            except Exception:  # closing must not hide the turn's outcome
                logger.exception("closing the backend failed")
            await self._emit(
                Done(
                    status=state.status,
                    total_ms=round(state.elapsed_ms(), 1),
                    ttft_ms=state.ttft_ms,
                    timings=dict(state.timings),
                    cpu_ms=dict(state.cpu_ms),
                )
            )

    async def _finish_failed(self, error: Error) -> None:
        if self.state.status == "failed":
            self.state.answer_text = ""  # a failed turn has no answer text
        # The nodes' hooks: tools stopped (no tool event after the fatal error), the
        # question and the partial answer stored (the database may be what failed: logged).
        await self.graph.close(self.state)
        error.fatal = True
        await self._emit(error)


class TurnFailed(Exception):
    """A turn that ended without an answer: ``code`` and ``message`` of its fatal error."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


_RAISED = {cls.code: cls for cls in (ModelNotFound, Unreachable, Timeout, NotSupported, BackendError)}


@dataclass
class TurnResult:
    """All events of a finished turn, with the final ones picked out."""

    events: list[Event] = field(default_factory=list)

    def _last(self, kind):
        return next((e for e in reversed(self.events) if isinstance(e, kind)), None)

    @property
    def answer(self) -> Answer | None:
        return self._last(Answer)

    @property
    def references(self) -> list[dict]:
        event = self._last(References)
        return event.references if event else []

    @property
    def errors(self) -> list[Error]:
        return [e for e in self.events if isinstance(e, Error)]

    @property
    def done(self) -> Done | None:
        return self._last(Done)

    def raise_for_error(self) -> None:
        """Raise the fatal error of a failed or interrupted turn as a typed exception:
        the backend's (:class:`~chat.backends.base.ModelNotFound`, ``Unreachable``,
        ``Timeout``, ...) for model server failures, :class:`TurnFailed` otherwise."""
        fatal = next((e for e in self.errors if e.fatal), None)
        if fatal is None:
            return
        if fatal.code in _RAISED:
            raise _RAISED[fatal.code](fatal.message)
        raise TurnFailed(fatal.code, fatal.message)


async def run_turn(request: TurnRequest, **kwargs) -> AsyncIterator[Event]:
    """Async generator of a turn's events; closing it early cancels the turn.

    :param kwargs: ``backend``, ``config`` (see :class:`Turn`).
    """
    turn = Turn(request, **kwargs).start()
    try:
        async for event in turn:
            yield event
    finally:
        if not turn.finished:
            turn.cancel()
            await turn.wait()


async def ask(request: TurnRequest, **kwargs) -> TurnResult:
    """Run a turn to the end and collect its events."""
    result = TurnResult()
    async for event in run_turn(request, **kwargs):
        result.events.append(event)
    return result

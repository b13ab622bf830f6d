"""Check the model's tool requests before anything runs.

A request is rejected (never called) when it names a function that was not offered
(destructive and non-allowed tools never are), when its arguments are not a JSON object
or do not match the tool's input schema (JSON Schema, the draft the schema declares,
2020-12 by default), when it repeats an earlier request, or when the turn's call limit
is reached. Rejections are reported like calls, with status ``rejected``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from jsonschema import Draft202012Validator, SchemaError, validators
from jsonschema.exceptions import best_match

from chat.backends.base import ToolRequest

from .catalog import OfferedTool

MAX_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class PlannedCall:
    """A checked call. ``call``: its position in the model's requests (1-based)."""

    call: int
    tool: OfferedTool
    arguments: dict


@dataclass(frozen=True)
class Rejection:
    """A request that is not run. ``tool`` is None when the name was not offered."""

    call: int
    function: str
    arguments: dict | str
    message: str
    tool: OfferedTool | None = None


def check_arguments(tool: OfferedTool, arguments: dict | str) -> dict:
    """``arguments`` if they fit the tool's schema.

    :raises ValueError: not a JSON object, or the first (most relevant) schema violation,
        e.g. "arguments of channel_density: 'channel' is a required property".
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise ValueError(f"arguments of {tool.function} are not valid JSON: {arguments[:80]!r}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"arguments of {tool.function} are not a JSON object: {json.dumps(arguments)[:80]}")
    schema = tool.input_schema
    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"the input schema of {tool.function} is invalid: {exc.message}") from None
    error = best_match(cls(schema).iter_errors(arguments))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise ValueError(f"arguments of {tool.function}{' at ' + where if where else ''}: {error.message}")
    return arguments


def plan_calls(
    requests: Sequence[ToolRequest], offered: Sequence[OfferedTool], max_calls: int
) -> tuple[list[PlannedCall], list[Rejection]]:
    """Split the model's requests into calls to run and rejections, both in request order.

    :param max_calls: calls per turn; requests beyond it are rejected.
    """
    by_function = {tool.function: tool for tool in offered}
    planned: list[PlannedCall] = []
    rejected: list[Rejection] = []
    seen: dict[tuple[str, str], int] = {}
    for number, request in enumerate(requests, start=1):
        tool = by_function.get(request.name)
        if tool is None:
            names = ", ".join(by_function) or "none"
            message = f"tool {request.name[:80]!r} was not offered (offered: {names})"
            rejected.append(Rejection(number, request.name, request.arguments, message[:MAX_MESSAGE_CHARS]))
            continue
        try:
            arguments = check_arguments(tool, request.arguments)
        except ValueError as exc:
            rejected.append(Rejection(number, request.name, request.arguments, str(exc)[:MAX_MESSAGE_CHARS], tool))
            continue
        key = (tool.function, json.dumps(arguments, sort_keys=True))
        if key in seen:
            rejected.append(Rejection(number, request.name, arguments, f"same call as call {seen[key]}", tool))
            continue
        if len(planned) >= max_calls:
            message = f"over the limit of {max_calls} tool call(s) per question (KLEA_MCP_MAX_CALLS)"
            rejected.append(Rejection(number, request.name, arguments, message, tool))
            continue
        seen[key] = number
        planned.append(PlannedCall(number, tool, arguments))
    return planned, rejected

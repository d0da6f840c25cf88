"""Structured run fields given as JSON text, as a CSV cell or a logging pipeline's text column holds
them: read as their JSON where the text can only mean that.

- ``input`` and ``output``: JSON text of a message (a ``role`` and a ``content``, ``parts`` or
  tool calls), a list holding one, or (for ``input``) Mastra's agent run input. Any other text
  stays text, JSON or not: ``"[1] Paris"``, ``'{"answer": "Paris"}'``, ``'["a", "b"]'`` and
  ``'{"role": "admin", "permissions": []}'`` are what an app answered.
- ``request_context``: JSON text of an object; ``expected_trajectory``: of an object or a list.
  Text that starts like JSON there but is none is an error naming the field: those fields hold
  no prose.

``ground_truth`` stays text: a reference answer may itself be JSON an app should write.
"""

from __future__ import annotations

import json
from typing import Any

from evaldag.errors import EvalDagError

#: How JSON text of an object or a list starts, after any blanks.
_OPENERS = ("[", "{")
#: The message lists of Mastra's agent run input (an ``input`` only).
_AGENT_INPUT_KEYS = frozenset({"inputMessages", "rememberedMessages", "systemMessages"})
#: The keys of which a message has one beside its role, in any shape evaldag reads.
_BODY_KEYS = frozenset({"content", "parts", "tool_calls", "toolInvocations", "tool_invocations"})
#: The structured fields besides the transcripts, by name and Mastra's key, and what their JSON
#: must be.
_STRUCTURED = {
    "request_context": (dict,),
    "requestContext": (dict,),
    "expected_trajectory": (dict, list),
    "expectedTrajectory": (dict, list),
}


def looks_like_json(text: str) -> bool:
    """Whether ``text`` starts as JSON text of an object or a list would."""
    first = text[:1]
    return first in _OPENERS or (first.isspace() and text.lstrip()[:1] in _OPENERS)


def transcript_json(text: str, field: str) -> Any:
    """``text``'s JSON when it is a transcript (see the module's docstring), else ``text``."""
    if not looks_like_json(text):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if _is_transcript(value, field) else text


def structured_json(text: str, field: str) -> Any:
    """``text``'s JSON for ``request_context`` / ``expected_trajectory`` (``field``, or Mastra's
    key) when it starts like JSON text; other text as it is; an error for text that starts like
    JSON but is none, or is JSON of another kind."""
    kinds = _STRUCTURED.get(field)
    if kinds is None or not looks_like_json(text):
        return text
    try:
        value = json.loads(text)
    except ValueError as error:
        raise _invalid(field, f"is text that is not JSON ({error})") from None
    if not isinstance(value, kinds):
        raise _invalid(field, f"is JSON of a {type(value).__name__}")
    return value


def _is_transcript(value: Any, field: str) -> bool:
    if isinstance(value, dict):
        return _is_message(value) or (
            field == "input" and not value.keys().isdisjoint(_AGENT_INPUT_KEYS)
        )
    return isinstance(value, list) and any(_is_message(item) for item in value)


def _is_message(value: Any) -> bool:
    """A dict with a role and a message's body: ``{"role": "admin", "permissions": [...]}`` is
    an app's answer."""
    return isinstance(value, dict) and "role" in value and not value.keys().isdisjoint(_BODY_KEYS)


def _invalid(field: str, problem: str) -> EvalDagError:
    wanted = " or ".join(f"a JSON {'object' if k is dict else 'array'}" for k in _STRUCTURED[field])
    return EvalDagError(
        "EVALDAG_INVALID_RUN_FIELD",
        f"{field} {problem}; give {wanted} (or leave the cell empty)",
        details={"field": field},
    )

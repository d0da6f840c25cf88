"""Run fields given as JSON text, as a CSV cell or a logging pipeline's text column holds them.

- ``input`` and ``output``: text whose JSON is a transcript is read as it
  (``evaldag._reader.read_transcript`` decides what is one); any other text stays text.
- ``request_context``: JSON text of an object; ``expected_trajectory``: of an object or a list.
  Text that starts like JSON there but is none is an error naming the field: those fields hold
  no prose.

A leading byte-order mark (text saved by Windows tools) is not part of the JSON. ``ground_truth``
stays text: a reference answer may itself be JSON an app should write.
"""

from __future__ import annotations

import json
from typing import Any

from evaldag.errors import EvalDagError

#: How JSON text of an object or a list starts, after any blanks and a byte-order mark.
_OPENERS = ("[", "{")
_BOM = "\ufeff"
#: What :func:`json_value` gives for text that is no JSON of an object or a list.
NOT_JSON = object()
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
    return first in _OPENERS or (
        (first.isspace() or first == _BOM) and text.lstrip(_BOM + " \t\r\n\f\v")[:1] in _OPENERS
    )


def json_value(text: str) -> Any:
    """The JSON object or array ``text`` holds, or :data:`NOT_JSON`."""
    if not looks_like_json(text):
        return NOT_JSON
    try:
        return json.loads(text.lstrip(_BOM))
    except ValueError:
        return NOT_JSON


def structured_json(text: str, field: str) -> Any:
    """``text``'s JSON for ``request_context`` / ``expected_trajectory`` (``field``, or Mastra's
    key) when it starts like JSON text; other text as it is; an error for text that starts like
    JSON but is none, or is JSON of another kind."""
    kinds = _STRUCTURED.get(field)
    if kinds is None or not looks_like_json(text):
        return text
    try:
        value = json.loads(text.lstrip(_BOM))
    except ValueError as error:
        raise _invalid(field, f"is text that is not JSON ({error})") from None
    if not isinstance(value, kinds):
        raise _invalid(field, f"is JSON of a {type(value).__name__}")
    return value


def _invalid(field: str, problem: str) -> EvalDagError:
    wanted = " or ".join(f"a JSON {'object' if k is dict else 'array'}" for k in _STRUCTURED[field])
    return EvalDagError(
        "EVALDAG_INVALID_RUN_FIELD",
        f"{field} {problem}; give {wanted} (or leave the cell empty)",
        details={"field": field},
    )

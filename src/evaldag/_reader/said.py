"""What an assistant said: every text of its messages, as the reader writes them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def said_texts(messages: Iterable[Any]) -> list[str]:
    """Every text of the assistant ``messages`` (Mastra's format-2 dicts), each once per message,
    in order: a message's content string, legacy ``content.content`` and each of its text parts.

    The "must not" readings use it (``checks.excludes``, the lower-is-better LLM scorers): an
    answer that said something, called a tool and ended with "Done." said all of it, where
    Mastra reads the last text.
    """
    said: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            said.append(content)
            continue
        found = [content.get("content"), content.get("text")] if isinstance(content, dict) else []
        parts = content.get("parts") if isinstance(content, dict) else content
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "text":
                found.append(part.get("text"))
        texts = [text for text in found if isinstance(text, str) and text]
        said.extend(dict.fromkeys(texts))  # each once, in order
    return said

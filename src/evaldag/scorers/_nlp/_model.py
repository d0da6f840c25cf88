"""compromise's data, read once from ``model.json.gz`` (written by
``tests/fixtures/code_scorers/compromise_model.cjs`` from compromise 14.17.0, MIT licence)."""

from __future__ import annotations

import gzip
import json
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

_PATH = Path(__file__).with_name("model.json.gz")


@dataclass(frozen=True, slots=True)
class TagInfo:
    parents: tuple[str, ...]
    conflicts: tuple[str, ...]
    children: tuple[str, ...]


@cache
def _char_class(category: str) -> str:
    """A regex class of every character in a Unicode general category (prefix), e.g. "Sc"."""
    chars = [
        chr(code)
        for code in range(sys.maxunicode + 1)
        if unicodedata.category(chr(code)).startswith(category)
    ]
    return "".join(re.escape(ch) for ch in chars)


def js_regex(source: str, flags: str, emoji: str = "") -> re.Pattern[str]:
    """A JS regex (source, flags) as a Python pattern: ``\\w`` and ``\\d`` ASCII as in JS,
    Unicode property escapes (which Python's re lacks) spelled as classes."""
    python_flags = re.IGNORECASE if "i" in flags else 0
    if "\\p{" in source:
        source = (
            source.replace(r"[\p{Emoji_Presentation}\p{Extended_Pictographic}]", f"[{emoji}]")
            .replace(r"\p{Letter}", r"[^\W\d_]")
            .replace(r"\p{Number}", r"\d")
            .replace(r"\p{Currency_Symbol}", f"[{_char_class('Sc')}]")
        )
    else:
        python_flags |= re.ASCII
    return re.compile(source, python_flags)


def _regex_rules(rows: list[list[Any]], emoji: str = "") -> tuple[tuple[re.Pattern[str], Any], ...]:
    return tuple((js_regex(source, flags, emoji), tag) for source, flags, tag in rows)


class Model:
    """Everything the tagger reads; built once (about a tenth of a second)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.tags = {
            tag: TagInfo(tuple(parents or ()), tuple(nots or ()), tuple(children or ()))
            for tag, (parents, nots, children) in data["tagSet"].items()
        }
        self.parent_tags = {tag: info.parents for tag, info in self.tags.items() if info.parents}
        self.lexicon: dict[str, str | tuple[str, ...]] = {}
        for tags, words in data["lexicon"].items():
            value = tuple(tags.split("|")) if "|" in tags else tags
            for word in words:
                self.lexicon[word] = value
        self.multi: dict[str, int] = data["multi"]
        self.frozen: dict[str, str] = data["frozen"]
        self.switches = {word: form for form, words in data["switches"].items() for word in words}
        self.clues: dict[str, dict[str, dict[str, str]]] = {
            form: {kind: dict(pairs) for kind, pairs in clue.items()}
            for form, clue in data["clues"].items()
        }
        self.suffix_patterns: list[dict[str, str]] = [p or {} for p in data["suffixPatterns"]]
        self.prefix_patterns: list[dict[str, str]] = [p or {} for p in data["prefixPatterns"]]
        self.ends_with = {char: _regex_rules(rows) for char, rows in data["endsWith"].items()}
        self.regex_normal = _regex_rules(data["regexNormal"])
        emoji = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in data["emoji"])
        self.regex_text = _regex_rules(data["regexText"], emoji)
        self.regex_numbers = _regex_rules(data["regexNumbers"])
        neighbours = data["neighbours"]
        self.left_tags = tuple(map(tuple, neighbours["leftTags"]))
        self.right_tags = tuple(map(tuple, neighbours["rightTags"]))
        self.left_words = dict(map(tuple, reversed(neighbours["leftWords"])))
        self.right_words = dict(map(tuple, reversed(neighbours["rightWords"])))
        self.org_words = frozenset(data["orgWords"])
        self.place_words = frozenset(data["placeWords"])
        self.conjugations = data["models"]
        self.prefixes = frozenset(data["prefixes"])
        self.suffixes = frozenset(data["suffixes"])
        self.abbreviations = frozenset(data["abbreviations"])
        self.aliases: dict[str, str] = data["aliases"]
        self.contractions: list[dict[str, Any]] = data["contractions"]
        self.number_suffixes = frozenset(data["numberSuffixes"])
        self.unicode = str.maketrans({k: v for k, v in data["unicode"].items() if len(k) == 1})
        self.emoticons = frozenset(data["emoticons"])
        self.rules: list[dict[str, Any]] = data["rules"]

    def parents(self, tag: str) -> tuple[str, ...]:
        info = self.tags.get(tag)
        return info.parents if info is not None else ()


@cache
def model() -> Model:
    """compromise's model, loaded on first use."""
    with gzip.open(_PATH, "rt", encoding="utf-8") as handle:
        return Model(json.load(handle))

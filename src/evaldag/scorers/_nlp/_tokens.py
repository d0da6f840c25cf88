"""compromise's tokenizer: sentences, terms with their punctuation, normal forms, contractions."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from evaldag.scorers._nlp._model import Model


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
_CLOSE_QUOTE = re.compile(f"[{_CLOSE_QUOTES}]")


def _is_sentence(text: str, model: Model) -> bool:
    if not _HAS_LETTER.search(text) or _ACRONYM_END.search(text):
        return False
    if len(text) == 3 and _LEAD_INITIAL.match(text):
        return False
    if _ELLIPSE_END.search(text):
        return False
    last_word = _END_STOP.sub("", text, count=1).split(" ")[-1].lower()
    return not (last_word in model.abbreviations and re.search(r"\. *$", text))


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
        if len(re.findall(r"[(\uff08]", split)) == 1 and i + 1 < len(splits):
            nxt = splits[i + 1]
            if len(nxt) < 250 and re.search(r"[)\uff09]", nxt) and not re.search(r"[(\uff08]", nxt):
                merged.append(split + nxt)
                i += 2
                continue
        merged.append(split)
        i += 1
    return merged


def sentences(text: str, model: Model) -> list[str]:
    """compromise's sentence split (``splitSentences``)."""
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
        space = re.match(r"\s+", found[i])
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


def _has_hyphen(word: str, model: Model) -> bool:
    parts = _DASH.split(word)
    if len(parts) <= 1:
        return False
    if len(parts[0]) == 1 and re.match("[a-z]", parts[0], re.IGNORECASE):
        return False
    if parts[0] in model.prefixes:
        return False
    if re.sub(r"[.?!]$", "", parts[1].strip()) in model.suffixes:
        return False
    return bool(_WORD_DASH_WORD.match(word) or _NUMBER_DASH_WORD.match(word))


def _term_strings(sentence: str, model: Model) -> list[str]:
    pieces: list[str] = []
    for word in re.split(r"(\S+)", sentence):
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
    if chunk.strip() in _model().emoticons:
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
    model = _model()
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
    value = value.translate(model.unicode)
    if "." in value and any(form.search(value) for form in _ACRONYM_FORMS):
        value = value.replace(".", "")
    return value


def normal(text: str, model: Model) -> str:
    """compromise's ``normal`` form: lowercase, edge punctuation off, ASCII-ish letters."""
    return _normal(text)


def _model() -> Model:
    from evaldag.scorers._nlp._model import model

    return model()


def _normalized(term_: Term, model: Model) -> Term:
    term_.normal = _normal(term_.text)
    return term_


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
    model = _model()
    aliases: list[str] = []
    if value in model.aliases:
        aliases.append(model.aliases[value])
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


def terms_of(sentence: str, model: Model) -> list[Term]:
    """A sentence's terms, contractions split, forms set (before tagging)."""
    terms = sentence_terms(sentence, model)
    _split_contractions(terms, model)
    for index, term_ in enumerate(terms):
        if term_.alias is None:
            set_alias(term_, model)
        set_machine(term_)
        term_.index = index
    return terms


def document(text: str, model: Model) -> list[list[Term]]:
    """Sentences of terms, contractions split, forms set (before tagging)."""
    return [terms_of(sentence, model) for sentence in sentences(text, model)]


# --- contractions (1-one/contraction-one) ------------------------------------------------------

_NUMBER_STARTS = frozenset("+-0123456789")
_ALWAYS_DID = frozenset(["what", "how", "when", "where", "why"])
_USE_WOULD = frozenset(["be", "go", "start", "think", "need"])
_USE_HAD = frozenset(["been", "gone"])
_NUM_DASH = re.compile("^[0-9][^-\u2013\u2014]*[-\u2013\u2014].*?[0-9]")
_RANGE = re.compile(
    "^([0-9.]{1,4}[a-z]{0,2}) ?[-\u2013\u2014] ?([0-9]{1,4}[a-z]{0,2})$", re.IGNORECASE
)
_TIME_RANGE = re.compile(
    "^([0-9]{1,2}(:[0-9][0-9])?(am|pm)?) ?[-\u2013\u2014] ?([0-9]{1,2}(:[0-9][0-9])?(am|pm)?)$",
    re.IGNORECASE,
)
_NUMBER_UNIT = re.compile("^([+-]?[0-9][.,0-9]*)([a-z\u00b0\u00b2\u00b3\u00b5/]+)$")


@lru_cache(maxsize=1)
def _known_maps() -> tuple[dict, dict, dict]:
    """compromise's contraction list by word, by ending and by beginning: (place, words)."""
    maps: tuple[dict, dict, dict] = ({}, {}, {})
    for place, known in enumerate(_model().contractions):
        for kind, found in zip(("word", "after", "before"), maps, strict=True):
            if kind in known:
                found.setdefault(known[kind], (place, list(known["out"])))
    return maps


def _known_contraction(model: Model, term_: Term, before: str | None, after: str | None):
    by_word, by_after, by_before = _known_maps()
    candidates = [by_word.get(term_.normal)]
    if after is not None:
        candidates.append(by_after.get(after))
    if before is not None and after and len(after) > 2:
        candidates.append(by_before.get(before))
    found = min((one for one in candidates if one is not None), default=None)
    if found is None:
        return None
    place, out = found
    known = model.contractions[place]
    if known.get("word") == term_.normal:
        return list(out)
    if "after" in known:
        return [before, *out]
    return [*out, after]


def _french(before: str, after: str | None) -> list[str] | None:
    if before == "j":
        return ["je", after or ""]
    if before == "l":
        return ["la" if after and after.endswith("e") else "le", after or ""]
    if before == "d":
        if after and re.search("(e|é|aison|sion|tion)$", after):
            if not re.search("(age|isme|acle|ege|oire)$", after):
                return ["du", after]
        if after and after.endswith("s"):
            return ["des", after]
        return ["de", after or ""]
    return None


def from_text(text: str, model: Model) -> list[Term]:
    """The terms of a short text, tagged alone (``fromText``: its first sentence)."""
    return [_copy(term_) for term_ in _from_text(text)]


@lru_cache(maxsize=4096)
def _from_text(text: str) -> tuple[Term, ...]:
    from evaldag.scorers._nlp import _pretag

    model = _model()
    found = sentences(text, model)
    terms = sentence_terms(found[0], model) if found else []
    for index, term_ in enumerate(terms):
        term_.index = index
    doc = [terms]
    _pretag.tag_words(doc, model)
    return tuple(terms)


def _copy(term_: Term) -> Term:
    twin = Term(term_.text, term_.pre, term_.post)
    for name in Term.__slots__:
        setattr(twin, name, getattr(term_, name))
    twin.tags = dict(term_.tags)
    twin.alias = list(term_.alias) if term_.alias else None
    return twin


def contraction_terms(terms: list[Term], i: int, words: list[str], model: Model) -> list[Term]:
    """The terms that replace ``terms[i]``: implicit words, the first keeping its text."""
    original = terms[i]
    new = from_text(" ".join(words), model)
    for term_ in new:
        set_alias(term_, model)
        term_.implicit = term_.machine = term_.text
        term_.pre = term_.post = term_.text = term_.normal = ""
    new[0].pre = original.pre
    new[-1].post = original.post
    new[0].text = original.text
    new[0].normal = original.normal
    return new


def _split_contractions(terms: list[Term], model: Model) -> None:
    from evaldag.scorers._nlp._tags import set_tag

    by_word = _known_maps()[0]
    for i in range(len(terms) - 1, -1, -1):
        term_ = terms[i]
        if (
            "'" not in term_.normal
            and term_.normal not in by_word
            and term_.text[:1] not in _NUMBER_STARTS
        ):
            continue
        before = after = None
        if "'" in term_.normal:
            before, after = term_.normal.split("'")[:2]
        words = _known_contraction(model, term_, before, after)
        if words is None and after == "t":
            if term_.normal not in ("ain't", "aint"):
                words = [term_.normal.replace("n't", "", 1), "not"]
        if words is None and after == "d":
            if before in _ALWAYS_DID:
                words = [before, "did"]
            elif i + 1 < len(terms) and terms[i + 1].normal in _USE_HAD:
                words = [before, "had"]
            elif i + 1 < len(terms) and terms[i + 1].normal in _USE_WOULD:
                words = [before, "would"]
        if words is None and before is not None:
            words = _french(before, after)
        if before == "there" and after == "s":
            been = any(t.normal == "been" for t in terms[i + 1 : 5])
            words = ["there", "has" if been else "is"]
        if words:
            terms[i : i + 1] = contraction_terms(terms, i, words, model)
            continue
        if _NUM_DASH.match(term_.normal):
            found = _RANGE.match(term_.text)
            if found and not re.match("^[0-9]{3}-[0-9]{4}$", term_.text):
                words = [found.group(1), "to", found.group(2)]
            elif found is None and (timed := _TIME_RANGE.match(term_.text)):
                words = [timed.group(1), "to", timed.group(4)]
            if words:
                new = contraction_terms(terms, i, words, model)
                terms[i : i + 1] = new
                set_tag(new, "NumberRange", model)
                if len(new) > 2 and "Time" in new[2].tags:
                    set_tag(new[:1], "Time", model)
            continue
        unit = _NUMBER_UNIT.match(term_.text)
        if unit and unit.group(2).lower().strip() not in model.number_suffixes:
            new = contraction_terms(terms, i, [unit.group(1), unit.group(2).lower().strip()], model)
            terms[i : i + 1] = new
            set_tag(new[1:2], "Unit", model)

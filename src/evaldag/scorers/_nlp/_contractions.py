"""Sentences as terms before tagging: contractions split, forms set (compromise's
``1-one/contraction-one``, and the short texts it tags alone to expand them)."""

from __future__ import annotations

import re
from functools import lru_cache

from evaldag.scorers._nlp import _pretag
from evaldag.scorers._nlp._model import Model, model
from evaldag.scorers._nlp._tags import set_tag
from evaldag.scorers._nlp._tokens import (
    Term,
    sentence_terms,
    sentences,
    set_alias,
    set_machine,
)


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
    for place, known in enumerate(model().contractions):
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
    loaded = model()
    found = sentences(text, loaded)
    terms = sentence_terms(found[0], loaded) if found else []
    for index, term_ in enumerate(terms):
        term_.index = index
    doc = [terms]
    _pretag.tag_words(doc, loaded)
    return tuple(terms)


def _copy(term_: Term) -> Term:
    twin = Term(term_.text, term_.pre, term_.post)
    twin.normal = term_.normal
    twin.machine = term_.machine
    twin.implicit = term_.implicit
    twin.switch = term_.switch
    twin.chunk = term_.chunk
    twin.frozen = term_.frozen
    twin.index = term_.index
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

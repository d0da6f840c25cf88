"""compromise's lexicon lookup (1-one/lexicon, 1-one/freeze) and its rough clauses
(2-two/preTagger/methods/quickSplit.js)."""

from __future__ import annotations

import re

from evaldag.scorers._nlp._model import Model
from evaldag.scorers._nlp._tags import set_tag
from evaldag.scorers._nlp._tokens import Term

Clause = list[Term]

# --- lexicon (1-one/lexicon, 1-one/freeze) -----------------------------------------------------

_LEXICON_PREFIX = re.compile("^(under|over|mis|re|un|dis|semi|pre|post)-?")
_PREFIXABLE = frozenset(
    ["Verb", "Infinitive", "PastTense", "Gerund", "PresentTense", "Adjective", "Participle"]
)


def _word(term: Term) -> str:
    return term.machine or term.normal


def freeze(doc: list[Clause], model: Model) -> None:
    """Tag and freeze the words of compromise's frozen lexicon."""
    for terms in doc:
        for i, term in enumerate(terms):
            word = _word(term)
            if word in model.multi and i + 1 < len(terms):
                for k in range(i + model.multi[word] - 1, i, -1):
                    words = terms[i : k + 1]
                    phrase = " ".join(_word(t) for t in words)
                    if phrase in model.frozen:
                        set_tag(words, model.frozen[phrase], model)
                        for t in words:
                            t.frozen = True
            if word in model.frozen:
                set_tag([term], model.frozen[word], model)
                term.frozen = True


def _multi_word(terms: Clause, i: int, model: Model) -> bool | None:
    word = _word(terms[i])
    if word not in model.multi or i + 1 >= len(terms):
        return None
    for k in range(i + model.multi[word] - 1, i, -1):
        words = terms[i : k + 1]
        if len(words) <= 1:
            return False
        phrase = " ".join(_word(t) for t in words)
        tag = model.lexicon.get(phrase)
        if tag is not None:
            set_tag(words, tag, model)
            if isinstance(tag, tuple) and len(tag) == 2 and "PhrasalVerb" in tag:
                set_tag(words[1:2], "Particle", model)
            return True
    return False


def _single_word(term: Term, model: Model) -> bool:
    word = _word(term)
    tag = model.lexicon.get(word)
    if tag is not None:
        set_tag([term], tag, model)
        return True
    if term.alias:
        for alias in term.alias:
            if alias in model.lexicon:
                set_tag([term], model.lexicon[alias], model)
                return True
    if _LEXICON_PREFIX.match(word):
        stem = _LEXICON_PREFIX.sub("", word, count=1)
        found = model.lexicon.get(stem)
        if len(stem) > 3 and isinstance(found, str) and found in _PREFIXABLE:
            set_tag([term], found, model)
            return True
    return False


def lexicon(doc: list[Clause], model: Model) -> None:
    """Tag the words (and multi-word phrases) that compromise's lexicon knows."""
    for terms in doc:
        for i, term in enumerate(terms):
            if not term.tags and not _multi_word(terms, i, model):
                _single_word(term, model)


# --- clauses (2-two/preTagger/methods/quickSplit.js) -------------------------------------------

_MAYBE_DATE = frozenset(["may", "april", "august", "jan"])
_CLAUSE_PUNCT = re.compile("[,:;]")


def _splits_before(terms: Clause, i: int) -> bool:
    if i >= len(terms):
        return False
    term = terms[i]
    if term.normal == "like" or term.normal in _MAYBE_DATE:
        return False
    if "Place" in term.tags or "Date" in term.tags:
        return False
    if i > 0:
        last = terms[i - 1]
        if "Date" in last.tags or last.normal in _MAYBE_DATE:
            return False
        if "Adjective" in last.tags or "Adjective" in term.tags:
            return False
    normal = term.normal
    return not (len(normal) in (1, 2, 4) and normal.isdigit() and normal.isascii())


def clauses(doc: list[Clause]) -> list[Clause]:
    """Sentences cut after a comma, colon or semicolon, roughly (``quickSplit``)."""
    pieces: list[Clause] = []
    for terms in doc:
        start = 0
        for i, term in enumerate(terms):
            if _CLAUSE_PUNCT.search(term.post) and _splits_before(terms, i + 1):
                pieces.append(terms[start : i + 1])
                start = i + 1
        if start < len(terms):
            pieces.append(terms[start:])
    return pieces

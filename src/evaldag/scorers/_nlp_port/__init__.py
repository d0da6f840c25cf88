"""English text elements for the completeness scorer, as Mastra reads them with compromise.

A port of the parts of compromise 14.17.0 (the JS library Mastra's completeness scorer uses) that
decide them: its tokenizer, lexicon, pre- and post-tagger, chunker, noun and verb phrases, and
the rewrite of every verb phrase to the infinitive. compromise's own data (lexicon, suffix
patterns, match rules, conjugation models) is read from ``model.json.gz``.
"""

from __future__ import annotations

import re
import unicodedata

from evaldag.scorers._nlp_port import _tagger, _tokens, _verbs, _views
from evaldag.scorers._nlp_port._model import model

_NON_WORD = re.compile(r"[^a-z0-9]+")
_MARKS = re.compile("[\u0300-\u036f]")


def element_words(strings: list[str]) -> list[str]:
    """Mastra's normalisation of extracted strings: accents off, lowercase, alphanumeric words,
    first occurrence kept."""
    text = _MARKS.sub("", unicodedata.normalize("NFD", " ".join(strings))).lower()
    return list(dict.fromkeys(_NON_WORD.sub(" ", text).split()))


def tagged(text: str) -> list[list[_tokens.Term]]:
    """compromise's document for ``text``: sentences of tagged, chunked terms."""
    m = model()
    doc = _tokens.document(text, m)
    _tagger.freeze(doc, m)
    _tagger.lexicon(doc, m)
    _tagger.pre_tag(doc, m)
    _tagger.contractions_two(doc, m)
    _tagger.post_tag(doc, m)
    _tagger.chunk(doc, m)
    return doc


def _text(terms: list[_tokens.Term]) -> str:
    return "".join(term.pre + term.text + term.post for term in terms)


def extracted_strings(text: str) -> list[str]:
    """The strings Mastra's completeness reads from ``text``: noun phrases, then every term of
    the text with each verb phrase rewritten to the infinitive."""
    doc = _views.Doc(tagged(text.strip()))
    spans = [(n, 0, len(terms)) for n, terms in enumerate(doc)]
    nouns = [_text(doc[n][start:end]) for n, start, end in _views.nouns(doc, spans)]
    _verbs.to_infinitive(doc, model())
    return [*nouns, *(_text([term]) for terms in doc for term in terms)]


def completeness_elements(text: str) -> list[str]:
    """The distinct normalised elements of ``text`` (Mastra's ``extractElements``)."""
    return element_words(extracted_strings(text))

"""English text elements for the completeness scorer, as Mastra reads them with compromise.

A port of the parts of compromise 14.17.0 (the JS library Mastra's completeness scorer uses) that
decide them: its tokenizer, lexicon, pre- and post-tagger, chunker, noun and verb phrases, and
the rewrite of every verb phrase to the infinitive. compromise's own data (lexicon, suffix
patterns, match rules, conjugation models) is read from ``model.json.gz``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache

from evaldag.scorers._nlp import _contractions, _posttag, _pretag, _tokens, _verbs, _views
from evaldag.scorers._nlp._model import model

_NON_WORD = re.compile(r"[^a-z0-9]+")
_MARKS = re.compile("[\u0300-\u036f]")


def element_words(strings: list[str]) -> list[str]:
    """Mastra's normalisation of extracted strings: accents off, lowercase, alphanumeric words,
    first occurrence kept."""
    text = _MARKS.sub("", unicodedata.normalize("NFD", " ".join(strings))).lower()
    return list(dict.fromkeys(_NON_WORD.sub(" ", text).split()))


def _tagged(doc: list[list[_tokens.Term]], fix: bool = True) -> list[list[_tokens.Term]]:
    m = model()
    _pretag.tag_words(doc, m, thaw=False)
    _posttag.contractions_two(doc, m)
    _posttag.post_tag(doc, m)
    _posttag.chunk(doc, m, fix)
    return doc


def tagged(text: str) -> list[list[_tokens.Term]]:
    """compromise's document for ``text``: sentences of tagged, chunked terms."""
    return _tagged(_contractions.document(text, model()))


def _text(terms: list[_tokens.Term]) -> str:
    return "".join(term.pre + term.text + term.post for term in terms)


def _strings(doc: _views.Doc, skip_chunks: bool = True) -> tuple[list[str], list[str], list[str]]:
    """A tagged document's noun phrases, its verb phrases in the infinitive, and its terms after
    that rewrite (see :func:`_verbs.to_infinitive` for ``skip_chunks``)."""
    spans = [(n, 0, len(terms)) for n, terms in enumerate(doc)]
    nouns = [_text(doc[n][start:end]) for n, start, end in _views.nouns(doc, spans)]
    phrases = _verbs.to_infinitive(doc, model(), skip_chunks)
    verbs = [_text(doc[n][start:end]) for n, start, end in phrases]
    return nouns, verbs, [_text([term]) for terms in doc for term in terms]


def _rewritten(
    doc: _views.Doc, again: Callable[[], _views.Doc]
) -> tuple[list[str], list[str], list[str]]:
    """:func:`_strings` of ``doc``; of the same document made ``again`` and rewritten with every
    chunking when a rewrite brought a negation into a sentence re-tagged without its chunks."""
    try:
        return _strings(doc)
    except _verbs.StaleChunks:
        return _strings(again(), skip_chunks=False)


def _sentence_doc(sentence: str) -> tuple[_views.Doc, tuple]:
    """One sentence tagged and chunked, and its chunk edges before they are fixed."""
    doc = _tagged([_contractions.terms_of(sentence, model())], fix=False)
    edges = _posttag.chunk_edges(doc[0])
    _posttag.fix_chunks(doc)
    return _views.Doc(doc), edges


@lru_cache(maxsize=8192)
def _sentence(sentence: str, alone: bool) -> tuple[tuple[tuple[str, ...], ...], tuple]:
    """One sentence's strings, and its chunk edges (see :func:`extracted_strings`)."""
    doc, edges = _sentence_doc(sentence)
    strings = _rewritten(doc, lambda: _sentence_doc(sentence)[0])
    return tuple(map(tuple, strings)), edges


def extracted_strings(text: str) -> list[str]:
    """The strings Mastra's completeness reads from ``text``: noun phrases, verb phrases in the
    infinitive, then every term of the text after that rewrite.

    compromise works sentence by sentence but for runs of verb chunks that cross a sentence
    boundary (a verbless run is dropped, a run with a verb kept); sentences are memoised, and a
    text where such a run would change a sentence's result is worked on whole.
    """
    text = text.strip()
    found = _tokens.sentences(text, model())
    parts = [_sentence(sentence, len(found) == 1) for sentence in found]
    for (_, before), (_, after) in zip(parts, parts[1:], strict=False):
        if before[1] is not None and after[0] is not None and before[1] != after[0]:
            strings = _rewritten(_views.Doc(tagged(text)), lambda: _views.Doc(tagged(text)))
            return [string for kind in strings for string in kind]
    return [string for kind in range(3) for strings, _ in parts for string in strings[kind]]


def forget_sentences() -> None:
    """Empty the memory of sentences read (for measuring speed on unseen text)."""
    _sentence.cache_clear()
    _posttag.forget()


def completeness_elements(text: str) -> list[str]:
    """The distinct normalised elements of ``text`` (Mastra's ``extractElements``)."""
    return element_words(extracted_strings(text))

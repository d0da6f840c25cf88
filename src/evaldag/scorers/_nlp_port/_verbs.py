"""compromise's ``verbs().toInfinitive()``: each verb phrase's main verb conjugated to the
infinitive with compromise's suffix models, its auxiliaries removed, and a negation written
"do/does not" (3-three/verbs/api/conjugate/toInfinitive.js)."""

from __future__ import annotations

import re

from evaldag.scorers._nlp_port import _views as views
from evaldag.scorers._nlp_port._model import Model
from evaldag.scorers._nlp_port._tags import set_tag
from evaldag.scorers._nlp_port._tokens import Term, from_text, normal
from evaldag.scorers._nlp_port._views import Doc, Span

_TRIM_START = re.compile(
    "^[(\\['\"*~\uff02\u201c\u2018\u201f\u201b\u201e\u2e42\u201a\u00ab\u2039\u2035\u2036\u2037"
    "\u301d\u0060\u301f]+"
)
_TRIM_END = re.compile(
    "[,:;)\\]*.?~!\u0022\uff02\u201d\u2019\u00bb\u203a\u2032\u2033\u2034\u301e\u00b4\u2014-]+$"
)
_PUNCT_TO_KILL = re.compile("[,:;)('\"\u201d\\]]")
_MODELS = {
    "Participle": "fromParticiple",
    "PastTense": "fromPast",
    "PresentTense": "fromPresent",
    "Gerund": "fromGerund",
}
_COPULAS = {"are", "were", "been", "is", "am", "was", "be", "being"}


def convert(word: str, rules: dict) -> str:
    """A word through one of compromise's suffix models (suffix-thumb's ``convert``)."""
    found = rules["ex"].get(word)
    if found:
        return found
    if any(word.endswith(same) for same in rules["same"]):
        return word
    forward, both = rules["fwd"], rules["both"]
    for size in range(len(word) - 1, 0, -1):
        suffix = word[len(word) - size :]
        if suffix in forward:
            return word[: len(word) - size] + forward[suffix]
        if suffix in both:
            return word[: len(word) - size] + both[suffix]
    if "" in forward:
        return word + forward[""]
    if "" in both:
        return word + both[""]
    return word


def infinitive(text: str, tense: str | None, model: Model) -> str:
    """``methods.two.transform.verb.toInfinitive``: "walked" (PastTense) -> "walk"."""
    from evaldag.scorers._nlp_port._tagger import guessed_tense

    parts = text.split(" ")
    verb, particle = parts[0], parts[1] if len(parts) > 1 else ""
    prefix = ""
    if particle and verb in model.prefixes:
        prefix, verb, particle = verb, particle, ""
    tense = tense or guessed_tense(text)
    if text in _COPULAS:
        found = "be"
    elif tense in _MODELS:
        found = convert(verb, model.conjugations[_MODELS[tense]])
    else:
        return text
    if particle:
        found += " " + particle
    if prefix:
        found = prefix + " " + found
    return found


def _normal_text(doc: Doc, span: Span, expanded: bool) -> str:
    """``text('normal')`` of a span, contractions read as their words when ``expanded``."""
    n, start, end = span
    terms = doc[n][start:end]
    text = ""
    for i, term in enumerate(terms):
        pre = _TRIM_START.sub("", term.pre, count=1)
        post = term.post
        word = term.normal
        if expanded and term.implicit is not None:
            word = normal(term.implicit, _model())
            if post == "" and i + 1 < len(terms) and terms[i + 1].implicit is not None:
                post = " "
        if re.fullmatch("[-\u2013\u2014]", post):
            post = " "
        post = _PUNCT_TO_KILL.sub("", post, count=1)
        post = re.sub(r"\?!+", "?", post, count=1)
        post = re.sub("!+", "!", post, count=1)
        post = re.sub(r"\?+", "?", post, count=1)
        post = re.sub(r"\.{2,}", "", post, count=1)
        if "Abbreviation" in term.tags:
            post = post.replace(".", "", 1)
        pre = re.sub(r"\s", "", pre, count=1)
        post = re.sub(r"\s+", " ", post, count=1)
        text += pre + word + post
    full = n == 0 and start == 0 and len(doc) == 1 and end == len(doc[0])
    if not full:
        text = text.strip()
    if start != 0:
        text = _TRIM_START.sub("", text, count=1)
        text = _TRIM_END.sub("", text, count=1)
        if text.endswith("'") and not text.endswith("s'"):
            text = text.replace("'", "", 1)
    return text


def _model() -> Model:
    from evaldag.scorers._nlp_port._model import model

    return model()


def _root(doc: Doc, span: Span) -> list[Span]:
    """The main verb of a phrase (``getMain``)."""
    n, start, end = span
    root = [span]
    if end - start > 1:
        root = views.without(doc, root, "(#Negative|#Auxiliary|#Modal|#Adverb|#Prefix)")
    if len(root) > 1:
        root = root[-1:]
    root = views.without(doc, root, "(want|wants|wanted) to")
    if not root:
        root = views.without(doc, [span], "#Negative")
    return root


def _expand(doc: Doc, n: int, first: int, last: int) -> None:
    """Contractions beside or inside terms first..last read as their words (``expand``)."""
    terms = doc[n]
    start = first - 1 if first > 0 and terms[first - 1].implicit else first
    end = last + 1 if last + 1 < len(terms) and terms[last + 1].implicit else last
    for term in terms[start : end + 1]:
        if term.implicit is not None:
            term.text = term.implicit
            term.implicit = None
            term.normal = normal(term.text, _model())


def _grow_expand(doc: Doc, n: int, first: int, last: int) -> None:
    """Expand every contraction touching first..last (``grow('@hasContraction+')``)."""
    terms = doc[n]
    while first > 0 and terms[first - 1].implicit:
        first -= 1
    while last + 1 < len(terms) and terms[last + 1].implicit:
        last += 1
    for term in terms[first : last + 1]:
        if term.implicit is not None:
            term.text = term.implicit
            term.implicit = None
            term.normal = normal(term.text, _model())


def _tense(terms: list[Term]) -> str | None:
    for tense in ("Infinitive", "Participle", "PastTense", "Gerund", "PresentTense"):
        if any(tense in t.tags for t in terms):
            return tense
    return None


def _plural_noun(doc: Doc, span: Span) -> bool:
    """Whether a noun phrase is plural (3-three/nouns/api/isPlural.js)."""
    if views.has(doc, [span], "#Plural") or views.has(doc, [span], "#Noun and #Noun"):
        return True
    if views.has(doc, [span], "(we|they)"):
        return True
    roots = views.match(doc, [span], "#Noun+")
    roots = views.without(doc, roots, "(#Adjective|#Preposition|#Determiner|#Value)")
    roots = views.without(doc, roots, "#Possessive")[:1] or [span]
    not_plural = (
        "(#Pronoun|#Place|#Value|#Person|#Uncountable|#Month|#WeekDay|#Holiday|#Possessive)"
    )
    if views.has(doc, roots, not_plural) or views.has(doc, [span], "#Singular"):
        return False
    text = _normal_text(doc, roots[0], False)
    return len(text) > 3 and text.endswith("s") and not text.endswith("ss")


_SUBORDINATE_START = "^(if|unless|while|but|for|per|at|by|that|which|who|from)"


def _does(doc: Doc, span: Span) -> str:
    """ "do" or "does" for a negated verb, by its subject (lib.js ``doDoes``)."""
    n, start, _ = span
    subject: list[Span] = []
    plural_subject = False
    if start > 0:
        before = [(n, 0, start)]
        parts = views.clauses(doc, before)
        parts = [
            part
            for i, part in enumerate(parts)
            if not views.has(doc, [part], _SUBORDINATE_START)
            and not (i > 0 and views.has(doc, [part], "^#Verb . #Noun+$"))
            and not (i > 0 and views.has(doc, [part], "^#Adverb"))
        ] or before
        found = views.nouns(doc, parts)
        last = found[-1:]
        pronoun = views.match(doc, last, "(i|he|she|we|you|they)")
        if pronoun:
            subject = views.nouns(doc, pronoun)
            plural_subject = any(_plural_noun(doc, s) for s in subject)
        else:
            subject = views.keep_if(doc, found, "^(that|this|those)")
            if subject:
                plural_subject = any(_plural_noun(doc, s) for s in subject)
            elif not found:
                subject = views.match(doc, before, "^(that|this|those)")
            else:
                subject = last
                plural_subject = _plural_noun(doc, last[0])
    if views.has(doc, subject, "i") or views.has(doc, subject, "we"):
        return "do"
    if views.has(doc, [span], "(are|were|does)") or views.has(doc, subject, "(those|they|we)"):
        return "do"
    return "do" if plural_subject else "does"


def _prepend(doc: Doc, n: int, at: int, text: str, model: Model) -> None:
    """Insert a word before ``doc[n][at]`` (``prepend``), expanding a contraction there."""
    if doc[n][at].implicit is not None:
        _expand(doc, n, at, at)
    doc[n][at:at] = from_text(text, model)


def to_infinitive(doc: Doc, model: Model) -> None:
    """Rewrite every verb phrase of ``doc`` to the infinitive, in place."""
    # Spans move as earlier phrases change: hold on to their terms.
    phrases = [(n, doc[n][start], doc[n][end - 1]) for n, start, end in views.verbs(doc)]
    for n, first, last in phrases:
        _verb_to_infinitive(doc, n, first, last, model)


def _verb_to_infinitive(doc: Doc, n: int, first: Term, last: Term, model: Model) -> None:
    terms = doc[n]
    start, end = terms.index(first), terms.index(last) + 1
    span = (n, start, end)
    root = _root(doc, span)
    negative = views.has(doc, [span], "#Negative")
    aux: list[Term] = []
    if root and root[0][1] > start:
        aux_spans = views.without(doc, [(n, start, root[0][1])], "(#Adverb|#Negative|#Prefix)")
        aux = [t for _, a, b in aux_spans for t in terms[a:b]]
    if root:
        text = "".join(_normal_text(doc, one, True) for one in root)
        _, root_start, root_end = root[0]
        found = infinitive(text, _tense(terms[root_start:root_end]), model)
        if found:
            old = terms[root_start:root_end]
            if any(t.implicit for t in old):
                _grow_expand(doc, n, root_start, root_end - 1)
            new = from_text(found, model)
            set_tag(new, "Verb", model)
            set_tag(new[:1], "Infinitive", model)
            terms[root_start:root_end] = new
            if new:
                first = new[0] if first in old else first
                last = new[-1] if last in old else last
    if any(term.implicit is not None for term in aux):
        for term in aux:
            index = terms.index(term)
            _expand(doc, n, index, index)
    for term in aux:
        index = terms.index(term)
        del terms[index]
        if term is first:
            first = terms[index]
    if negative:
        start, end = terms.index(first), terms.index(last) + 1
        if not views.has(doc, [(n, start, end)], "not"):
            _prepend(doc, n, start, "not", model)
            end += 1
        _prepend(doc, n, start, _does(doc, (n, start, end)), model)

"""compromise's ``verbs().toInfinitive()``: each verb phrase's main verb conjugated to the
infinitive with compromise's suffix models, its auxiliaries removed, and a negation written
"do/does not" (3-three/verbs/api/conjugate/toInfinitive.js)."""

from __future__ import annotations

import re

from evaldag.scorers._nlp import _views as views
from evaldag.scorers._nlp._contractions import from_text
from evaldag.scorers._nlp._model import Model, model
from evaldag.scorers._nlp._pretag import guessed_tense
from evaldag.scorers._nlp._tags import set_tag
from evaldag.scorers._nlp._tokens import Term, normal
from evaldag.scorers._nlp._views import Doc, Span

_TRIM_START = re.compile(
    "^[(\\['\"*~\uff02\u201c\u2018\u201f\u201b\u201e\u2e42\u201a\u00ab\u2039\u2035\u2036\u2037"
    "\u301d\u0060\u301f]+"
)
_TRIM_END = re.compile(
    "[,:;)\\]*.?~!\u0022\uff02\u201d\u2019\u00bb\u203a\u2032\u2033\u2034\u301e\u00b4\u2014-]+$"
)
_PUNCT_TO_KILL = re.compile("[,:;)('\"\u201d\\]]")
_DASH = re.compile("[-\u2013\u2014]")
_QUESTION_BANG = re.compile(r"\?!+")
_BANGS = re.compile("!+")
_QUESTIONS = re.compile(r"\?+")
_DOTS = re.compile(r"\.{2,}")
_SPACE = re.compile(r"\s")
_SPACES = re.compile(r"\s+")
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


def _normal_text(doc: Doc, spans: list[Span], expanded: bool) -> str:
    """``text('normal')`` of a view, contractions read as their words when ``expanded``."""
    text = ""
    for n, start, end in spans:
        sentence = doc[n]
        for i in range(start, end):
            term = sentence[i]
            pre = _TRIM_START.sub("", term.pre, count=1)
            post = term.post
            word = term.normal
            if expanded and term.implicit is not None:
                word = normal(term.implicit, model())
                if post == "" and i + 1 < len(sentence) and sentence[i + 1].implicit is not None:
                    post = " "
            if _DASH.fullmatch(post):
                post = " "
            post = _PUNCT_TO_KILL.sub("", post, count=1)
            post = _QUESTION_BANG.sub("?", post, count=1)
            post = _BANGS.sub("!", post, count=1)
            post = _QUESTIONS.sub("?", post, count=1)
            post = _DOTS.sub("", post, count=1)
            if "Abbreviation" in term.tags:
                post = post.replace(".", "", 1)
            pre = _SPACE.sub("", pre, count=1)
            post = _SPACES.sub(" ", post, count=1)
            text += pre + word + post
    covered = sum(end - start for _, start, end in spans)
    if not (spans[0][0] == 0 and covered == sum(len(terms) for terms in doc)):
        text = text.strip()
    if spans[0][1] != 0:
        text = _TRIM_START.sub("", text, count=1)
        text = _TRIM_END.sub("", text, count=1)
        if text.endswith("'") and not text.endswith("s'"):
            text = text.replace("'", "", 1)
    return text


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


def _expand(doc: Doc, n: int, spans: list[tuple[int, int]], greedy: bool = False) -> None:
    """Contractions in or beside the spans read as their words: the spans grown by one term
    (``grow('@hasContraction')``) or by every contraction term (``...+``) on each side, then
    each run of contraction terms in them expanded (``contractions().expand()``). A term in two
    runs is expanded twice, and its text lost, as in compromise."""
    terms = doc[n]
    size = len(terms)
    runs: list[list[Term]] = []
    for start, end in spans:
        if greedy:
            while end < size and terms[end].implicit:
                end += 1
            while start > 0 and terms[start - 1].implicit:
                start -= 1
        else:
            end += 1 if end < size and terms[end].implicit else 0
            start -= 1 if start > 0 and terms[start - 1].implicit else 0
        i = start
        while i < end:
            if terms[i].implicit:
                j = i
                while j < end and terms[j].implicit:
                    j += 1
                runs.append(terms[i:j])
                i = j
            else:
                i += 1
    for run in runs:
        for i, term in enumerate(run):
            term.text = term.implicit or ""
            term.implicit = None
            term.normal = normal(term.text, model())
            if i + 1 < len(run) and term.post == "":
                term.post = " "
    doc.changed(n)


def _contracted(terms: list[Term]) -> bool:
    return any(term.implicit for term in terms)


def _tense(doc: Doc, spans: list[Span]) -> str | None:
    terms = [t for n, a, b in spans for t in doc[n][a:b]]
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
    text = _normal_text(doc, roots[:1], False)
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
    if doc[n][at].implicit:
        _expand(doc, n, [(at, at + 1)])
    new = from_text(text, model)
    new[-1].post = " "
    doc[n][at:at] = new
    doc.changed(n)


class StaleChunks(Exception):
    """A sentence re-tagged without its chunks came to hold a negation, whose "do/does" reads
    them: :func:`to_infinitive` is to run again with ``skip_chunks=False``."""


#: The words that can be tagged #Negative: compromise's lexicon has "never", "non" and "not",
#: and one post-tagger rule tags "no" (in "is no").
_NEGATIONS = frozenset(["never", "non", "not", "no"])


def _may_negate(terms: list[Term]) -> bool:
    """Whether a term is, or may be tagged, #Negative."""
    for term in terms:
        if "Negative" in term.tags or term.alias and not _NEGATIONS.isdisjoint(term.alias):
            return True
        if not _NEGATIONS.isdisjoint((term.normal, term.machine, term.implicit, term.text.lower())):
            return True
    return False


def to_infinitive(doc: Doc, model: Model, skip_chunks: bool = True) -> list[Span]:
    """Rewrite every verb phrase of ``doc`` to the infinitive, in place; the phrases after.

    :param skip_chunks: re-tag a sentence without a negation without its chunks; raises
        :class:`StaleChunks` when a rewrite brings a negation into such a sentence.
    """
    # Spans move as earlier phrases change: each is found again by its first and last terms.
    phrases = [(n, doc[n][start], doc[n][end - 1]) for n, start, end in views.verbs(doc)]
    done: list[Span] = []
    unchunked: set[int] = set()
    for i, (n, first, last) in enumerate(phrases):
        terms = doc[n]
        if first in terms and last in terms:
            if n in unchunked and _may_negate(terms):
                raise StaleChunks
            done.append(
                _verb_to_infinitive(doc, (n, terms.index(first), terms.index(last) + 1), model)
            )
            # compromise tags the sentence again after each rewrite; later phrases see it. The
            # chunks it gives are read only by a negated phrase's "do/does" (the subject's noun
            # phrases) and by the next chunking: in a sentence that cannot hold a negation,
            # chunking again is left out.
            if i + 1 < len(phrases) and phrases[i + 1][0] == n:
                if skip_chunks and (n in unchunked or not _may_negate(doc[n])):
                    unchunked.add(n)
                _retag(doc, n, model, chunks=n not in unchunked)
    return done


def _retag(doc: Doc, n: int, model: Model, chunks: bool = True) -> None:
    from evaldag.scorers._nlp import _posttag, _pretag

    terms = doc[n]
    for index, term in enumerate(terms):
        term.index = index
    sentence = [terms]
    _pretag.tag_words(sentence, model, thaw=False)
    _posttag.post_tag(sentence, model)
    if chunks:
        _posttag.chunk(sentence, model)
    doc.changed(n)


def _verb_to_infinitive(doc: Doc, span: Span, model: Model) -> Span:
    """compromise's ``toInf``. The root is replaced term by term; afterwards the phrase is
    a range of positions again, as compromise's softened pointer is, so auxiliaries are removed
    by position even where the replacement changed the number of terms."""
    n, start, end = span
    terms = doc[n]
    root = _root(doc, span)
    negative = views.has(doc, [span], "#Negative")
    aux: list[Span] = []
    if root:
        parts = views.split_before(doc, [span], root)
        if len(parts) > 1:
            aux = views.without(doc, parts[:1], "(#Adverb|#Negative|#Prefix)")
        found = infinitive(_normal_text(doc, root, True), _tense(doc, root), model)
        if found:
            _replace(doc, n, [terms[a:b] for _, a, b in root], found, model)
    removed = [(max(a, start), min(b, end)) for _, a, b in aux if max(a, start) < min(b, end)]
    if removed:
        if _contracted([t for a, b in removed for t in terms[a:b]]):
            _expand(doc, n, removed)
        for a, b in reversed(removed):
            del terms[a:b]
            end -= b - a
        doc.changed(n)
    if negative and start < len(terms):
        if not views.has(doc, [(n, start, end)], "not"):
            _prepend(doc, n, start, "not", model)
            end += 1
        _prepend(doc, n, start, _does(doc, (n, start, end)), model)
        end += 1
    return n, start, end


def _replace(doc: Doc, n: int, roots: list[list[Term]], text: str, model: Model) -> None:
    """Put the words of ``text`` after each root span, then remove the roots (``replace``)."""
    terms = doc[n]
    for root in roots:
        at = terms.index(root[-1])
        if root[-1].implicit:
            _expand(doc, n, [(at, at + 1)])
        new = from_text(text, model)
        set_tag(new, "Verb", model)
        set_tag(new[:1], "Infinitive", model)
        if new:
            # the new words keep the root's punctuation and spacing
            new[0].pre = root[0].pre or new[0].pre
            new[-1].post = root[-1].post
        terms[at + 1 : at + 1] = new
    old = [term for root in roots for term in root]
    if _contracted(old):
        _expand(doc, n, [(terms.index(r[0]), terms.index(r[-1]) + 1) for r in roots], greedy=True)
    gone = {id(term) for term in old}
    terms[:] = [term for term in terms if id(term) not in gone]
    doc.changed(n)

"""compromise's views: spans of a document's sentences, matched, split and filtered
(1-one/match/api, 1-one/pointers), and the chunk-based finders built on them: clauses, noun
phrases (3-three/nouns/find.js) and verb phrases (3-three/verbs/find.js)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from evaldag.scorers._nlp._match import find
from evaldag.scorers._nlp._syntax import Index, pattern
from evaldag.scorers._nlp._tokens import Term

#: (sentence, start, end): a run of terms of one sentence.
Span = tuple[int, int, int]


class Doc:
    """A document: sentences of terms, with an index of each sentence for matching. (Not a
    list subclass: a compiled class cannot be one.)"""

    __slots__ = ("sentences", "_indexes")

    def __init__(self, sentences: list[list[Term]]) -> None:
        self.sentences = sentences
        self._indexes: dict[int, Index] = {}

    def __getitem__(self, n: int) -> list[Term]:
        return self.sentences[n]

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[list[Term]]:
        return iter(self.sentences)

    def index(self, n: int) -> Index:
        found = self._indexes.get(n)
        if found is None:
            found = self._indexes[n] = Index(self[n])
        return found

    def changed(self, n: int) -> None:
        """Forget sentence ``n``'s index: its terms or their tags changed."""
        self._indexes.pop(n, None)


def match(doc: Doc, spans: Sequence[Span], text: str, group=None) -> list[Span]:
    """Every match of a pattern inside each span (anchors are the span's edges)."""
    compiled = pattern(text)
    found: list[Span] = []
    for n, start, end in spans:
        at = doc.index(n)
        if compiled.possible(at):
            found.extend(
                (n, first, last)
                for first, last in find(doc[n], compiled, group, False, None, at, start, end)
            )
    return found


def has(doc: Doc, spans: Sequence[Span], text: str) -> bool:
    compiled = pattern(text)
    for n, start, end in spans:
        at = doc.index(n)
        if compiled.possible(at) and find(doc[n], compiled, None, True, None, at, start, end):
            return True
    return False


def keep_if(doc: Doc, spans: Sequence[Span], pattern: str) -> list[Span]:
    """The spans that hold a match (``if``)."""
    return [span for span in spans if has(doc, [span], pattern)]


def keep_if_no(doc: Doc, spans: Sequence[Span], pattern: str) -> list[Span]:
    return [span for span in spans if not has(doc, [span], pattern)]


def _split_all(spans: Sequence[Span], cuts: Sequence[Span]) -> list[dict[str, Span]]:
    """Each span cut by the matches inside it into before/match/after (``splitAll``)."""
    pieces: list[dict[str, Span]] = []
    for span in spans:
        n, start, end = span
        inside = sorted((cut for cut in cuts if cut[0] == n and start <= cut[1] and cut[2] <= end),
                        key=lambda cut: cut[1])  # fmt: skip
        if not inside:
            pieces.append({"passthrough": span})
            continue
        carry = span
        for i, cut in enumerate(inside):
            piece: dict[str, Span] = {"match": cut}
            if carry[1] < cut[1]:
                piece["before"] = (n, carry[1], min(cut[1], carry[2]))
            if carry[2] > cut[2]:
                piece["after"] = (n, cut[2], carry[2])
            if i + 1 == len(inside):
                pieces.append(piece)
            else:
                pieces.append({key: piece[key] for key in ("before", "match") if key in piece})
                if "after" in piece:
                    carry = piece["after"]
    return pieces


def _cuts(doc: Doc, spans: Sequence[Span], by: str | list[Span], group) -> list[Span]:
    return match(doc, spans, by, group) if isinstance(by, str) else by


def split_on(doc: Doc, spans: Sequence[Span], by: str | list[Span], group=None) -> list[Span]:
    """[before], [match], [after]."""
    cuts = _cuts(doc, spans, by, group)
    if not cuts:
        return list(spans)
    found: list[Span] = []
    for piece in _split_all(spans, cuts):
        found.extend(
            piece[key] for key in ("passthrough", "before", "match", "after") if key in piece
        )
    return found


def split_before(doc: Doc, spans: Sequence[Span], by: str | list[Span], group=None) -> list[Span]:
    """[before], [match after]."""
    cuts = _cuts(doc, spans, by, group)
    if not cuts:
        return list(spans)
    pieces = _split_all(spans, cuts)
    for i, piece in enumerate(pieces):
        following = pieces[i + 1] if i + 1 < len(pieces) else None
        if "after" not in piece and following is not None and "before" in following:
            if "match" in piece and piece["match"][0] == following["before"][0]:
                piece["after"] = following.pop("before")
    found: list[Span] = []
    for piece in pieces:
        found.extend(piece[key] for key in ("passthrough", "before") if key in piece)
        if "match" in piece and "after" in piece:
            found.append((piece["match"][0], piece["match"][1], piece["after"][2]))
        elif "match" in piece:
            found.append(piece["match"])
    return found


def split_after(doc: Doc, spans: Sequence[Span], by: str | list[Span], group=None) -> list[Span]:
    """[before match], [after]."""
    cuts = _cuts(doc, spans, by, group)
    if not cuts:
        return list(spans)
    found: list[Span] = []
    for piece in _split_all(spans, cuts):
        if "passthrough" in piece:
            found.append(piece["passthrough"])
        if "before" in piece and "match" in piece:
            found.append((piece["before"][0], piece["before"][1], piece["match"][2]))
        else:
            found.extend(piece[key] for key in ("before", "match") if key in piece)
        if "after" in piece:
            found.append(piece["after"])
    return found


def without(doc: Doc, spans: Sequence[Span], by: str | list[Span]) -> list[Span]:
    """The spans with the matches cut out (``not``)."""
    cuts = _cuts(doc, spans, by, None)
    if not cuts:
        return list(spans)
    found: list[Span] = []
    for piece in _split_all(spans, cuts):
        found.extend(piece[key] for key in ("passthrough", "before", "after") if key in piece)
    return found


# --- clauses (3-three/chunker/api/clauses.js) --------------------------------------------------


def _grown(doc: Doc, span: Span) -> Span:
    """A span with one more word on either side, when there is one (``grow('.')``)."""
    n, start, end = span
    return (n, max(0, start - 1), min(len(doc[n]), end + 1))


def _comma_splits(doc: Doc, spans: Sequence[Span]) -> list[Span]:
    kept: list[Span] = []
    for comma in match(doc, spans, "@hasComma"):
        n, start, end = comma
        if start == 0 or end + 2 > len(doc[n]):
            continue
        more = [_grown(doc, comma)]
        for rule in (
            "@hasComma @hasComma",
            "@hasComma (and|or) .",
            "(#City && @hasComma) #Country",
            "(#WeekDay && @hasComma) #Date",
            "(#Date+ && @hasComma) #Value",
            "(#Adjective && @hasComma) #Adjective",
        ):
            more = keep_if_no(doc, more, rule)
        if more:
            kept.append(comma)
    return split_after(doc, spans, kept)


def clauses(doc: Doc, spans: Sequence[Span]) -> list[Span]:
    """Spans cut into clauses, at commas, semicolons, conjunctions, ... (``clauses``)."""
    found = _comma_splits(doc, spans)
    found = split_after(doc, found, "(@hasEllipses|@hasSemicolon|@hasDash|@hasColon)")
    found = split_after(doc, found, "^#Pronoun (said|says)")
    found = split_before(doc, found, "(said|says) #ProperNoun$")
    found = split_before(doc, found, ". . if .{4}")
    for rule in (
        "and while", "now that", "ever since", "(supposing|although)", "even (while|if|though)",
        "(whereas|whose)", "as (though|if)", "(til|until)",
    ):  # fmt: skip
        found = split_before(doc, found, rule)
    but = match(doc, found, "#Verb .* [but] .* #Verb", 0)
    if but:
        found = split_before(doc, found, but)
    condition = match(doc, keep_if(doc, found, "if .{2,9} then ."), "then")
    if condition:
        found = split_before(doc, found, condition)
    return found


# --- noun and verb phrases ---------------------------------------------------------------------


def nouns(doc: Doc, spans: Sequence[Span]) -> list[Span]:
    """compromise's noun phrases (``nouns``)."""
    found = match(doc, clauses(doc, spans), "<Noun>")
    commas = without(doc, match(doc, found, "@hasComma"), "#Place")
    if commas:
        found = split_after(doc, found, commas)
    found = split_on(doc, found, "#Expression")
    found = split_on(doc, found, "(he|she|we|you|they|i)")
    found = split_on(doc, found, "(#Noun|#Adjective) [(he|him|she|it)]", 0)
    found = split_on(doc, found, "[(he|him|she|it)] (#Determiner|#Value)", 0)
    found = split_before(doc, found, "#Noun [(the|a|an)] #Adjective? #Noun", 0)
    found = split_on(doc, found, "[(here|there)] #Noun", 0)
    found = split_on(doc, found, "[#Noun] (here|there)", 0)
    found = split_before(doc, found, "(our|my|their|your)")
    found = split_on(doc, found, "#Noun [#Determiner]", 0)
    return keep_if(doc, found, "#Noun")


def verbs(doc: Doc) -> list[Span]:
    """compromise's verb phrases (``verbs``)."""
    found = match(doc, [(n, 0, len(terms)) for n, terms in enumerate(doc)], "<Verb>")
    found = without(doc, found, "#Conjunction")
    found = without(doc, found, "#Preposition")
    found = split_after(doc, found, "@hasComma")
    found = split_after(doc, found, "[(do|did|am|was|is|will)] (is|was)", 0)
    found = split_before(doc, found, "(#Verb && !#Copula) [being] #Verb", 0)
    found = split_before(doc, found, "#Verb [to be] #Verb", 0)
    found = split_after(doc, found, "[help] #PresentTense", 0)
    found = split_before(doc, found, "(#PresentTense|#PastTense) [#Copula]$", 0)
    found = split_before(doc, found, "(#PresentTense|#PastTense) [will be]$", 0)
    found = split_before(doc, found, "(#PresentTense|#PastTense) [(had|has)]", 0)
    found = without(doc, found, "#Reflexive$")
    found = without(doc, found, "#Adjective")
    found = split_after(doc, found, "[#PastTense] #PastTense", 0)
    found = split_after(doc, found, "[#PastTense] #Auxiliary+ #PastTense", 0)
    found = split_after(doc, found, "#Copula [#Gerund] #PastTense", 0)
    found = keep_if(doc, found, "#Verb")
    if has(doc, found, "(#Verb && !#Auxiliary) #Adverb+? #Copula"):
        found = split_before(doc, found, "#Copula")
    return found

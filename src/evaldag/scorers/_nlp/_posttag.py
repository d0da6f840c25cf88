"""compromise's contractions that need tags (2-two/contraction-two), its post-tagger (570 match
rules, all found first, then applied in turn; 2-two/postTagger) and its chunker
(3-three/chunker)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from evaldag.scorers._nlp._contractions import contraction_terms
from evaldag.scorers._nlp._lexicon import Clause, _word, clauses
from evaldag.scorers._nlp._match import find
from evaldag.scorers._nlp._model import Model
from evaldag.scorers._nlp._pretag import looks_plural, tag_words
from evaldag.scorers._nlp._syntax import CHUNK, TAG_KEYS, Index, Pattern, Token, parse
from evaldag.scorers._nlp._tags import can_be, set_tag, un_tag
from evaldag.scorers._nlp._tokens import Term

# --- contractions that need tags (2-two/contraction-two) ---------------------------------------

_HAS_WORDS = frozenset(["been", "become"])
_IS_WORDS = frozenset(["what", "how", "when", "if", "too"])
_ADJ_LIKE = frozenset(["too", "also", "enough"])
_NOT_POSSESSIVE = frozenset(["that", "there", "let", "here", "everywhere"])
_NOUN_LIKE = frozenset(["is", "are", "did", "were", "could", "should", "must", "had", "have"])
_HAD_WORDS = frozenset(["better", "done", "before", "it", "had"])


def _is_possessive(terms: Clause, i: int) -> bool:
    """Whether "x's" is possessive rather than "x is" or "x has" (isPossessive.js)."""
    term = terms[i]
    if _word(term) in _NOT_POSSESSIVE:
        return False
    if "Possessive" in term.tags:
        return True
    if "QuestionWord" in term.tags or term.normal in ("he's", "she's"):
        return False
    nxt = terms[i + 1] if i + 1 < len(terms) else None
    if nxt is None:
        return True
    if term.normal == "it's":
        return "#Noun" in nxt.tags
    after = terms[i + 2] if i + 2 < len(terms) else None
    if nxt.switch == "Noun|Gerund":
        if after is None:
            return "Actor" in term.tags or "ProperNoun" in term.tags
        return "Copula" in after.tags
    if "Verb" in nxt.tags:
        return "Infinitive" in nxt.tags or ("Gerund" not in nxt.tags and "PresentTense" in nxt.tags)
    if nxt.switch == "Adj|Noun":
        if after is None:
            return False
        if after.normal in _NOUN_LIKE:
            return True
        if after.normal in ("too", "also", "enough", "about"):
            return False
    if "Noun" in nxt.tags:
        if _word(nxt) in ("here", "there", "everywhere") or "Possessive" in nxt.tags:
            return False
        return not ("ProperNoun" in nxt.tags and "ProperNoun" not in term.tags)
    if i > 0 and terms[i - 1].normal in ("in", "by", "for"):
        return True
    if "Adjective" in nxt.tags:
        if after is None:
            return False
        if "Noun" in after.tags and "Pronoun" not in after.tags:
            return nxt.normal not in ("above", "below", "behind")
        return after.switch == "Noun|Verb"
    return "Value" in nxt.tags


def _is_or_has(terms: Clause, i: int) -> str:
    for o in range(i + 1, len(terms)):
        t = terms[o]
        if t.normal in _HAS_WORDS:
            return "has"
        if t.normal in _IS_WORDS:
            return "is"
        if any(tag in t.tags for tag in ("Gerund", "Determiner", "Adjective")):
            return "is"
        nxt = terms[o + 1] if o + 1 < len(terms) else None
        if t.switch == "Adj|Past" and nxt is not None:
            if nxt.normal in _ADJ_LIKE or "Preposition" in nxt.tags:
                return "is"
        if "PastTense" in t.tags:
            return "is" if nxt is not None and nxt.normal == "for" else "has"
    return "is"


def _had_or_would(terms: Clause, i: int) -> str | None:
    for t in terms[i + 1 :]:
        if t.normal in _HAD_WORDS:
            return "had"
        if t.normal in ("have", "be"):
            return "would"
        if "PastTense" in t.tags or t.switch == "Adj|Past":
            return "had"
        if "PresentTense" in t.tags or "Infinitive" in t.tags:
            return "would"
        if "#Determiner" in t.tags:
            return "had"
        if "Adjective" in t.tags:
            return "would"
    return None


def _last_noun(terms: Clause, i: int) -> Term | None:
    for t in reversed(terms[:i]):
        if any(tag in t.tags for tag in ("Noun", "Pronoun", "Plural", "Singular")):
            return t
    return None


def _contraction_words(terms: Clause, i: int, model: Model) -> list[str] | None:
    term = terms[i]
    after = term.normal.split("'")[1] if "'" in term.normal else None
    before = term.normal.split("'")[0]
    if after == "d":
        if before in ("how", "what"):
            return [before, "did"]
        return [before, "had" if _had_or_would(terms, i) == "had" else "would"]
    if after == "t":
        if term.normal not in ("ain't", "aint"):
            return [term.normal.replace("n't", "", 1), "not"]
        if i + 1 < len(terms) and terms[i + 1].normal == "never":
            return ["have"]
        noun = _last_noun(terms, i)
        if noun is not None:
            if noun.normal in ("we", "they") or "Plural" in noun.tags:
                return ["are", "not"]
            if noun.normal == "i":
                return ["am", "not"]
        return ["is", "not"]
    if after == "s":
        if _is_possessive(terms, i):
            set_tag([term], "Possessive", model)
            return None
        if before == "let":
            return [before, "us"]
        if before == "there" and i + 1 < len(terms) and "Plural" in terms[i + 1].tags:
            return [before, "are"]
        return [before, _is_or_has(terms, i)]
    return None


def contractions_two(doc: list[Clause], model: Model) -> None:
    """Split "'s", "'d" and "ain't" by the tags around them, and tag the new words."""
    for terms in doc:
        for i in range(len(terms) - 1, -1, -1):
            if terms[i].implicit:
                continue
            words = _contraction_words(terms, i, model)
            if not words:
                continue
            new = contraction_terms(terms, i, words, model)
            terms[i : i + 1] = new
            for index, term in enumerate(terms):
                term.index = index
            window = [terms[max(0, i - 1) : min(len(terms), i + len(new) + 1)]]
            tag_words(window, model)


# --- post-tagger: compromise's match rules, all found first, then applied in turn --------------


class Rule:
    """One post-tagger (or chunker) rule, parsed, with what a clause must hold to try it."""

    __slots__ = (
        "match", "regs", "pattern", "not_if", "group", "tag", "untag", "safe", "chunk", "freeze",
        "if_no", "needs", "wants", "min_want", "min_words", "need_set", "want_set",
    )  # fmt: skip

    def __init__(self, spec: dict) -> None:
        self.match: str = spec["match"]
        self.regs = parse(self.match)
        self.pattern = Pattern(self.regs)
        self.not_if = Pattern(parse(spec["notIf"])) if spec.get("notIf") else None
        group = spec.get("group")
        self.group = None if group is None else str(group)
        self.tag = spec.get("tag")
        self.untag = spec.get("unTag")
        self.safe = bool(spec.get("safe"))
        self.chunk = spec.get("chunk")
        self.freeze = bool(spec.get("freeze"))
        if_no = spec.get("ifNo")
        self.if_no = [if_no] if isinstance(if_no, str) else if_no
        self.needs = [need for reg in self.regs for need in _needs(reg)]
        self.wants: list[str] = []
        self.min_want = 0
        for reg in self.regs:
            if reg.get("operator") == "or" and not reg.get("optional") and not reg.get("negative"):
                self.wants.extend(reg.get("fastOr", ()))
                for block in reg.get("choices", ()):
                    self.wants.extend(need for one in block if (need := _need(one)))
                self.min_want += 1
        self.min_words = sum(1 for reg in self.regs if not reg.get("optional"))
        self.need_set = frozenset(self.needs)
        self.want_set = frozenset(self.wants) if len(set(self.wants)) == len(self.wants) else None


def _need(reg: dict) -> str | None:
    if reg.get("optional") or reg.get("negative"):
        return None
    if "tag" in reg:
        return "#" + reg["tag"]
    if "word" in reg:
        return reg["word"]
    if "switch" in reg:
        return f"%{reg['switch']}%"
    return None


def _needs(reg: dict) -> list[str]:
    found = [_need(reg)]
    if reg.get("operator") == "and" and "choices" in reg:
        found.extend(_need(one) for block in reg["choices"] for one in block)
    return [need for need in found if need]


#: The keys most clauses hold, most common first (on the fit prose); others are rarer.
_COMMON_KEYS = {
    key: 20 - rank
    for rank, key in enumerate(
        [
            *"#Noun #Singular #Verb #PresentTense #Determiner #Preposition #Infinitive".split(),
            *"#Adjective #Plural #Conjunction #ProperNoun #PastTense #Auxiliary #Copula".split(),
            *"#Adverb the a to of and".split(),
        ]
    )
}


def _wants(rule: Rule) -> frozenset[str] | bool | None:
    """How a clause is tested for a rule's wants: not at all, for one of a set (a rule with one
    list of choices), or by counting them (True)."""
    if not rule.wants:
        return None
    return frozenset(rule.wants) if rule.min_want == 1 else True


def _reads_chunks(tokens: Sequence[Token]) -> bool:
    return any(
        token.kind == CHUNK or any(_reads_chunks(block) for block in token.choices)
        for token in tokens
    )


class Net:
    """Rules indexed by the words and tags they need (``buildNet``)."""

    def __init__(self, rules: list[Rule]) -> None:
        hooks: dict[str, list[Rule]] = {}
        for rule in rules:
            for key in [*rule.needs, *rule.wants]:
                listed = hooks.setdefault(key, [])
                if all(other.match != rule.match for other in listed):
                    listed.append(rule)
        # JS objects list integer-like keys first, in numeric order.
        numeric = sorted((key for key in hooks if re.fullmatch("0|[1-9][0-9]*", key)), key=int)
        order = [*numeric, *(key for key in hooks if key not in numeric)]
        #: rule -> {key: (rank of the key, place of the rule under it)}: compromise tries a
        #: clause's rules key by key, in this order.
        ranks: dict[int, list[tuple[int, int, str]]] = {}
        for rank, key in enumerate(order):
            for place, rule in enumerate(hooks[key]):
                ranks.setdefault(id(rule), []).append((rank, place, key))
        # A rule's place is that of its first key (in that order) the clause holds: of the keys
        # up to its first need (which the clause must hold), so with no want before its first
        # need, the place of that need.
        self.leads: dict[Rule, list[tuple[int, int, str]]] = {}
        self.places: dict[Rule, tuple[int, int]] = {}
        for rule in rules:
            found = sorted(ranks.get(id(rule), ()))
            first = next((n for n, rank in enumerate(found) if rank[2] in rule.need_set), None)
            if first == 0:
                self.places[rule] = found[0][:2]
            else:
                self.leads[rule] = found if first is None else found[: first + 1]
        # Each rule under the least common key a clause must hold for it to apply, or under
        # each of its wants (it applies only where a clause holds one) when none is common.
        self.by_key: dict[str, list[Rule]] = {}
        for rule in rules:
            needs = sorted(rule.needs, key=lambda key: -_COMMON_KEYS.get(key, 0))[-1:]
            if needs and rule.wants:
                if not any(want in _COMMON_KEYS for want in rule.wants):
                    needs = []
            for key in needs or rule.wants:
                self.by_key.setdefault(key, []).append(rule)
        self.keys = frozenset(self.by_key)
        self.checks = {
            key: [
                (
                    rule,
                    rule.min_words,
                    rule.need_set,
                    frozenset(rule.if_no or ()) or None,
                    _wants(rule),
                )
                for rule in rules
            ]
            for key, rules in self.by_key.items()
        }
        self.always = [rule for rule in rules if not rule.needs and not rule.wants]
        #: Whether a rule may read chunks (a ``<Chunk>`` token; the post-tagger's never do).
        self.chunks = any(
            _reads_chunks(pattern.tokens)
            for rule in rules
            for pattern in (rule.pattern, rule.not_if)
            if pattern is not None
        )
        #: What the choice of rules reads of a clause: these keys, and its size up to this.
        self.read = frozenset(
            key for rule in rules for key in [*rule.needs, *rule.wants, *(rule.if_no or ())]
        )
        self.longest = max((rule.min_words for rule in rules), default=0)
        self.chosen: dict[tuple[frozenset[str], int], list[Rule]] = {}

    def candidates(self, haves: set[str], size: int) -> list[Rule]:
        """The rules to try on a clause, in compromise's order (``getHooks``, ``trimDown``)."""
        key = (self.read.intersection(haves), min(size, self.longest))
        found = self.chosen.get(key)
        if found is None:
            if len(self.chosen) >= 20_000:
                self.chosen.clear()
            found = self.chosen[key] = self._candidates(key[0], size)
        return found

    def _candidates(self, haves: frozenset[str], size: int) -> list[Rule]:
        found: dict[Rule, tuple[int, int]] = {}
        by_key, places, leads = self.checks, self.places, self.leads
        for key in self.keys.intersection(haves):
            for rule, least, needs, if_no, wants in by_key[key]:
                if size < least or rule in found or not needs <= haves:
                    continue
                if if_no is not None and not if_no.isdisjoint(haves):
                    continue
                if wants is not None:
                    if wants.__class__ is frozenset:
                        if wants.isdisjoint(haves):
                            continue
                    elif sum(want in haves for want in rule.wants) < rule.min_want:
                        continue
                place = places.get(rule)
                if place is None:
                    place = next(rank[:2] for rank in leads[rule] if rank[2] in haves)
                found[rule] = place
        ordered = sorted(found, key=found.__getitem__)
        return ordered + [rule for rule in self.always if size >= rule.min_words]


def _haves(terms: Clause) -> set[str]:
    """The words, tags and switches a clause holds (``cacheDoc``)."""
    items: set[str] = set()
    for term in terms:
        if term.normal:
            items.add(term.normal)
        if term.switch:
            items.add(f"%{term.switch}%")
        if term.implicit:
            items.add(term.implicit)
        if term.machine:
            items.add(term.machine)
        if term.alias:
            items.update(term.alias)
        items.update(map(TAG_KEYS.__getitem__, term.tags))
    return items


#: A clause's matches by the state of its terms (what matching reads of them): a sentence is
#: tagged again after each verb rewrite, and most of its clauses are then as they were.
_SWEPT: dict[tuple, list[tuple[Rule, int, int]]] = {}
_SWEPT_MAX = 50_000


def _state(terms: Clause, chunks: bool) -> tuple:
    """What matching reads of a clause's terms (their chunks only for a net that reads them)."""
    return tuple(
        (t.text, t.pre, t.post, t.normal, t.machine, t.implicit,
         tuple(t.alias) if t.alias else None, tuple(t.tags), t.switch, chunks and t.chunk)
        for t in terms
    )  # fmt: skip


def forget() -> None:
    """Empty the memory of clauses matched and of the rules chosen for them."""
    _SWEPT.clear()
    for net in [*_POST_NET, *_CHUNK_NET]:
        net.chosen.clear()


def _matches(net: Net, terms: Clause) -> list[tuple[Rule, int, int]]:
    key = (id(net), _state(terms, net.chunks))
    found = _SWEPT.get(key)
    if found is None:
        at = Index(terms)
        found = [
            (rule, start, end)
            for rule in net.candidates(_haves(terms), len(terms))
            for start, end in find(terms, rule.pattern, rule.group, False, rule.not_if, at)
        ]
        if len(_SWEPT) >= _SWEPT_MAX:
            _SWEPT.clear()
        _SWEPT[key] = found
    return found


def sweep(net: Net, doc: list[Clause]) -> list[tuple[Rule, Clause]]:
    """Every match of every rule that may apply, in compromise's order (``bulkMatch``)."""
    return [(rule, terms[start:end]) for terms in doc for rule, start, end in _matches(net, terms)]


def apply(found: list[tuple[Rule, Clause]], model: Model) -> None:
    """Tag (or chunk) each match in turn (``bulkTagger``)."""
    for rule, terms in found:
        if not terms or not (rule.tag or rule.chunk or rule.untag):
            continue
        if rule.safe:
            if not can_be(terms, rule.tag, model) or terms[-1].post == "-":
                continue
        if rule.tag is not None:
            set_tag(terms, rule.tag, model, rule.safe)
            if rule.tag == "Noun":
                number = "Plural" if looks_plural(terms[-1].text) else "Singular"
                set_tag(terms[-1:], number, model, rule.safe)
            if rule.freeze:
                for term in terms:
                    term.frozen = True
        if rule.untag is not None:
            un_tag(terms, rule.untag, model)
        if rule.chunk:
            for term in terms:
                term.chunk = rule.chunk


_POST_NET: list[Net] = []


def post_tag(doc: list[Clause], model: Model) -> None:
    """compromise's post-tagger: its match rules on each clause."""
    if not _POST_NET:
        _POST_NET.append(Net([Rule(spec) for spec in model.rules]))
    apply(sweep(_POST_NET[0], clauses(doc)), model)
    for terms in doc:
        for term in terms:
            term.frozen = False


# --- chunks: Noun, Verb, Adjective or Pivot for every term (3-three/chunker) -------------------

_CHUNK_RULES: list[dict[str, Any]] = [
    {"match": "[that] #Determiner #Noun", "group": 0, "chunk": "Pivot"},
    {"match": "#PastTense [that]", "group": 0, "chunk": "Pivot"},
    {"match": "[so] #Determiner", "group": 0, "chunk": "Pivot"},
    {"match": "#Copula #Adverb+? [#Adjective]", "group": 0, "chunk": "Adjective"},
    {"match": "#Adjective and #Adjective", "chunk": "Adjective"},
    {"match": "#Adverb+ and #Adverb #Verb", "chunk": "Verb"},
    {"match": "#Gerund #Adjective$", "chunk": "Verb"},
    {"match": "#Gerund to #Verb", "chunk": "Verb"},
    {"match": "#PresentTense and #PresentTense", "chunk": "Verb"},
    {"match": "#Adverb #Negative", "chunk": "Verb"},
    {"match": "(want|wants|wanted) to #Infinitive", "chunk": "Verb"},
    {"match": "#Verb #Reflexive", "chunk": "Verb"},
    {"match": "#Verb [to] #Adverb? #Infinitive", "group": 0, "chunk": "Verb"},
    {"match": "[#Preposition] #Gerund", "group": 0, "chunk": "Verb"},
    {"match": "#Infinitive [that] <Noun>", "group": 0, "chunk": "Verb"},
    {"match": "#Noun of #Determiner? #Noun", "chunk": "Noun"},
    {"match": "#Value+ #Adverb? #Adjective", "chunk": "Noun"},
    {"match": "the [#Adjective] #Noun", "chunk": "Noun"},
    {"match": "#Singular in #Determiner? #Singular", "chunk": "Noun"},
    {"match": "#Plural [in] #Determiner? #Noun", "group": 0, "chunk": "Pivot"},
    {"match": "#Noun and #Determiner? #Noun", "notIf": "(#Possessive|#Pronoun)", "chunk": "Noun"},
]
_CHUNK_NET: list[Net] = []


def chunk(doc: list[Clause], model: Model, fix: bool = True) -> None:
    """Give every term a chunk (``chunks``); ``fix``: then :func:`fix_chunks`."""
    for terms in doc:
        for term in terms:
            tags = term.tags
            if term.normal == "this":
                term.chunk = "Noun"
            elif term.normal == "then":
                term.chunk = "Pivot"
            elif "Verb" in tags:
                term.chunk = "Verb"
            elif "Noun" in tags or "Determiner" in tags or "Value" in tags:
                term.chunk = "Noun"
            elif "QuestionWord" in tags:
                term.chunk = "Pivot"
    for terms in doc:
        for i, term in enumerate(terms):
            if term.chunk:
                continue
            left = terms[i - 1] if i > 0 else None
            right = terms[i + 1] if i + 1 < len(terms) else None
            if "Adjective" in term.tags:
                if left is not None and "Copula" in left.tags:
                    term.chunk = "Adjective"
                elif left is not None and "Determiner" in left.tags:
                    term.chunk = "Noun"
                elif right is not None and "Noun" in right.tags:
                    term.chunk = "Noun"
            elif "Adverb" in term.tags or "Negative" in term.tags:
                if left is not None and "Adjective" in left.tags:
                    term.chunk = "Adjective"
                elif left is not None and "Verb" in left.tags:
                    term.chunk = "Verb"
                elif right is not None and "Adjective" in right.tags:
                    term.chunk = "Adjective"
                elif right is not None and "Verb" in right.tags:
                    term.chunk = "Verb"
    if not _CHUNK_NET:
        _CHUNK_NET.append(Net([Rule(spec) for spec in _CHUNK_RULES]))
    apply(sweep(_CHUNK_NET[0], doc), model)
    for terms in doc:
        for term in terms:
            if term.chunk is None:
                if "Conjunction" in term.tags or "Preposition" in term.tags:
                    term.chunk = "Pivot"
                elif "Adverb" in term.tags:
                    term.chunk = "Verb"
                else:
                    term.chunk = "Noun"
    if fix:
        fix_chunks(doc)


def chunk_edges(terms: Clause) -> tuple[bool | None, bool | None]:
    """For a sentence's first and last runs of chunks (before :func:`fix_chunks`): None when
    the run is not a Verb chunk, else whether it holds a verb."""

    def edge(run: list[Term]) -> bool | None:
        if not run or run[0].chunk != "Verb":
            return None
        return any("Verb" in t.tags for t in run)

    if not terms:
        return None, None
    first_end = next((i for i, t in enumerate(terms) if t.chunk != terms[0].chunk), len(terms))
    last_start = next(
        (i + 1 for i in range(len(terms) - 1, -1, -1) if terms[i].chunk != terms[-1].chunk), 0
    )
    return edge(terms[:first_end]), edge(terms[last_start:])


def fix_chunks(doc: list[Clause]) -> None:
    """A run of Verb chunks without a verb is no chunk (05-fixUp.js). Runs cross sentences."""
    current = None
    run: list[Term] = []
    runs: list[list[Term]] = []
    for terms in doc:
        for term in terms:
            if run and term.chunk == current:
                run.append(term)
            else:
                run = [term]
                runs.append(run)
                current = term.chunk
    for run in runs:
        if run[0].chunk == "Verb" and not any("Verb" in t.tags for t in run):
            for term in run:
                term.chunk = None

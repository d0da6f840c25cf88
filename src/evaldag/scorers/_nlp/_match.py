"""compromise's matching (1-one/match/methods/match): a compiled pattern found in a clause of
terms, with the same greedy, optional and negative logic."""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence

from evaldag.scorers._nlp._syntax import (
    ANYTHING,
    CHOICES,
    CHUNK,
    FAST_OR,
    METHOD,
    REGEX,
    SWITCH,
    TAG,
    WORD,
    Index,
    Pattern,
    Token,
)
from evaldag.scorers._nlp._tokens import Term

# --- matching one term (1-one/match/methods/term/doesMatch.js) ---------------------------------

_TITLE_CASE = re.compile("^[^\\W\\d_a-z][a-z'\u00c0-\u00ff]")
_START_QUOTE = re.compile(
    "[\u0022\uff02\u0027\u201c\u2018\u201f\u201b\u201e\u2e42\u201a\u00ab\u2039\u2035\u2036\u2037"
    "\u301d\u0060\u301f]"
)
_END_QUOTE = re.compile(
    "[\u0022\uff02\u0027\u201d\u2019\u00bb\u203a\u2032\u2033\u2034\u301e\u00b4]"
)
_HYPHEN = re.compile("^[-\u2013\u2014]$")
_SPACED_DASH = re.compile(" [-\u2013\u2014]{1,3} ")


def _method(name: str, term: Term) -> bool:
    post = term.post
    if name == "hasComma":
        return "," in post
    if name in ("hasQuote", "hasQuotation"):
        return bool(_START_QUOTE.search(term.pre) or _END_QUOTE.search(post))
    if name == "hasPeriod":
        return "." in post and "..." not in post
    if name == "hasExclamation":
        return "!" in post
    if name == "hasQuestionMark":
        return "?" in post or "\u00bf" in post
    if name == "hasEllipses":
        return ".." in post or "\u2026" in post
    if name == "hasSemicolon":
        return ";" in post
    if name == "hasColon":
        return ":" in post
    if name == "hasSlash":
        return "/" in term.text
    if name == "hasHyphen":
        return bool(_HYPHEN.match(post) or _HYPHEN.match(term.pre))
    if name == "hasDash":
        return bool(_SPACED_DASH.search(post) or _SPACED_DASH.search(term.pre))
    if name == "hasContraction":
        return bool(term.implicit)
    if name == "isAcronym":
        return "Acronym" in term.tags
    if name == "isKnown":
        return bool(term.tags)
    if name == "isTitleCase":
        return bool(_TITLE_CASE.match(term.text)) and term.text[:1].isupper()
    if name == "isUpperCase":
        return bool(term.text) and all(ch.isupper() for ch in term.text)
    return False


def _does_match(term: Term, token: Token, index: int, length: int) -> bool:
    kind = token.kind
    if kind == ANYTHING:
        return True
    if token.start and index != 0 or token.end and index != length - 1:
        return False
    if kind == TAG:
        return token.value in term.tags
    if kind == WORD:
        word = token.value
        if term.machine == word or word == term.text or word == term.normal:
            return True
        return term.alias is not None and word in term.alias
    if kind == FAST_OR:
        words = token.value
        return (term.implicit or term.machine or term.normal) in words or term.text in words
    if kind == METHOD:
        return _method(token.value, term)
    if kind == REGEX:
        return bool(token.value.search(term.normal))
    if kind == CHUNK:
        return term.chunk == token.value
    if kind == SWITCH:
        return term.switch == token.value
    # A slow (a b|c) block never matches a lone term: compromise passes it a list of blocks.
    return False


def matches(term: Term, token: Token, index: int, length: int) -> bool:
    """Whether one term matches one token, negation included (``wrapMatch``)."""
    found = _does_match(term, token, index, length)
    return not found if token.negative else found


# --- matching a sequence of tokens (1-one/match/methods/match) ---------------------------------


class _State:
    """A match attempt on ``terms[base:end]`` inside the window ``terms[low:end]``; ``t`` counts
    terms from ``base``; anchors and lengths are the window's."""

    __slots__ = ("terms", "base", "low", "size", "t", "r", "tokens", "groups", "length", "group")

    def __init__(self, terms: Sequence[Term], base: int, low: int, end: int, tokens):
        self.terms = terms
        self.base = base
        self.low = low
        self.size = end - base
        self.t = 0
        self.r = 0
        self.tokens = tokens
        self.groups: dict[str, list[int]] = {}
        self.length = end - low
        self.group: str | None = None

    def hit(self, offset: int, token: Token | None) -> bool:
        if token is None or offset >= self.size:
            return False
        at = self.base + offset
        return matches(self.terms[at], token, at - self.low, self.length)

    def group_at(self, offset: int) -> list[int]:
        """The current capture group as [start, length], opened at ``offset`` if new."""
        assert self.group is not None
        found = self.groups.get(self.group)
        if found is None:
            found = self.groups[self.group] = [offset, 0]
        return found

    def ahead(self, step: int = 1) -> Token | None:
        index = self.r + step
        return self.tokens[index] if index < len(self.tokens) else None


def _greedy_end(state: _State, end_token: Token | None) -> int | None:
    token = state.tokens[state.r].copy(start=False, end=False)
    first = state.t
    low, high = token.min, token.max
    while state.t < state.size:
        count = state.t - first + 1
        if end_token is not None and state.hit(state.t, end_token):
            if low is None or count >= low:
                return state.t
        if high is not None and count == high:
            return state.t
        if not state.hit(state.t, token):
            if low is not None and count < low:
                return None
            return state.t
        state.t += 1
    if low is not None and state.t - first + 1 < low:
        return None
    return state.t


def _simple_match(state: _State) -> bool:
    token = state.tokens[state.r]
    start_at = state.t
    term = state.terms[state.base + state.t]
    following = state.ahead()
    if token.optional and following is not None:
        if token.negative:
            return True
        # 'foo? foo': skip the next token when it matches this term but not the next one
        if state.hit(state.t, following) and not state.hit(state.t + 1, following):
            state.r += 1
    if term.implicit and state.t + 1 < state.size:
        if state.terms[state.base + state.t + 1].implicit:
            current = state.tokens[state.r]
            if current.kind == WORD and current.value == term.normal:
                state.t += 1
            if current.kind == METHOD and current.value == "hasContraction":
                state.t += 1
    state.t += 1
    if token.end and state.t != state.size and not token.greedy:
        return False
    if token.greedy:
        end = _greedy_end(state, state.ahead())
        if end is None:
            return False
        state.t = end
        if state.tokens[state.r].end and state.base - state.low + state.t != state.length:
            return False
    if state.group is not None:
        group = state.group_at(start_at)
        if state.t > 1 and state.tokens[state.r].greedy:
            group[1] += state.t - start_at
        else:
            group[1] += 1
    return True


def _choice_length(state: _State, block: Sequence[Token], skip: int) -> int:
    size = 0
    for token in block:
        t = state.t + skip + size
        if not state.hit(t, token):
            return 0
        size += 1
        if token.greedy:
            repeated = token.copy(start=False, end=False)
            for i in range(t + 1, state.size):
                if not state.hit(i, repeated):
                    break
                size += 1
    return size


def _choices_length(state: _State, skip: int) -> int:
    for block in state.tokens[state.r].choices:
        size = _choice_length(state, block, skip)
        if size > 0:
            return size
    return 0


def _block_length(state: _State) -> int:
    token = state.tokens[state.r]
    if token.conjunction:
        longest = 0
        for block in token.choices:
            for offset, one in enumerate(block):
                if not state.hit(state.t + offset, one):
                    return 0
            longest = max(longest, len(block))
        return longest
    skip = _choices_length(state, 0)
    if skip and token.greedy:
        more = _choices_length(state, skip)
        while more > 0:
            skip += more
            more = _choices_length(state, skip)
    return skip


def _block(state: _State, size: int) -> bool:
    token = state.tokens[state.r]
    if size:
        if token.negative:
            return False
        if state.group is not None:
            state.group_at(state.t)[1] += size
        if token.end and state.t + state.base - state.low + size != state.length:
            return False
        state.t += size
        return True
    if token.negative:
        if not token.optional:
            state.t += 1
        return True
    return token.optional


def _negative(state: _State) -> bool:
    token = state.tokens[state.r]
    positive = token.copy(negative=False)
    if state.hit(state.t, positive):
        return False
    if token.optional:
        following = state.ahead()
        if following is not None:
            if state.hit(state.t, following):
                state.r += 1
            elif following.optional and state.ahead(2) is not None:
                if state.hit(state.t, state.ahead(2)):
                    state.r += 2
    if token.greedy:
        end_token = state.ahead()
        skip = 0
        for t in range(state.t, state.size):
            if state.hit(t, positive) or end_token is not None and state.hit(t, end_token):
                break
            skip += 1
            if positive.max is not None and skip == positive.max:
                break
        if skip == 0 or (positive.min or 0) > skip:
            return False
        state.t += skip
        return True
    state.t += 1
    return True


def _anything_greedy(state: _State) -> bool:
    token = state.tokens[state.r]
    end_token = state.ahead()
    if end_token is None:
        skip_to: int | None = state.size
    else:
        skip_to = next((t for t in range(state.t, state.size) if state.hit(t, end_token)), None)
    if not skip_to:
        return False
    if token.min is not None and skip_to - state.t < token.min:
        return False
    if token.max is not None and skip_to - state.t > token.max:
        state.t += token.max
        return True
    if state.group is not None:
        state.group_at(state.t)[1] += skip_to - state.t
    state.t = skip_to
    return True


def from_here(
    terms: Sequence[Term], base: int, tokens: Sequence[Token], low: int, end: int
) -> tuple[int, dict[str, list[int]]] | None:
    """The match of ``tokens`` beginning at ``terms[base]`` in the window ``terms[low:end]``:
    (its length, its groups as [offset, length]), or None (``fromHere``)."""
    state = _State(terms, base, low, end, tokens)
    count = len(tokens)
    while state.r < count:
        token = tokens[state.r]
        state.group = token.group
        if state.t >= state.size:
            if any(not remain.optional for remain in tokens[state.r :]):
                return None
            break
        kind = token.kind
        if kind == ANYTHING and token.greedy:
            alive = _anything_greedy(state)
        elif kind == CHOICES:
            alive = _block(state, _block_length(state))
        elif kind == ANYTHING:
            alive = not token.negative and _simple_match(state)
        elif (
            token.end
            and token.greedy
            and base - low + state.t < state.length - 1
            and state.hit(state.t, token.copy(end=False))
        ):
            alive = _simple_match(state)
        elif token.negative:
            alive = _negative(state)
        elif state.hit(state.t, token):
            alive = _simple_match(state)
        else:
            alive = token.optional
        if not alive:
            return None
        state.r += 1
    if state.t == 0:
        return None
    return state.t, state.groups


def _simple_here(
    terms: Sequence[Term], i: int, tokens: Sequence[Token], low: int, end: int
) -> tuple[int, dict[str, list[int]]] | None:
    """:func:`from_here` for a pattern of one-term tokens, without its state machine."""
    t = i
    length = end - low
    groups: dict[str, list[int]] = {}
    for token in tokens:
        if t >= end:
            return None
        term = terms[t]
        kind = token.kind
        if kind == CHOICES:
            tests = (matches(term, block[0], t - low, length) for block in token.choices)
            if not (all(tests) if token.conjunction else any(tests)):
                return None
        elif kind != ANYTHING and not matches(term, token, t - low, length):
            return None
        if token.group is not None:
            group = groups.get(token.group)
            if group is None:
                groups[token.group] = [t - i, 1]
            else:
                group[1] += 1
        if (
            term.implicit
            and t + 1 < end
            and terms[t + 1].implicit
            and (
                kind == WORD
                and token.value == term.normal
                or kind == METHOD
                and token.value == "hasContraction"
            )
        ):
            t += 1
        t += 1
        if token.end and t != end:
            return None
    return t - i, groups


def find(
    terms: Sequence[Term],
    compiled: Pattern,
    group: str | int | None = None,
    just_one: bool = False,
    not_if: Pattern | None = None,
    at: Index | None = None,
    low: int = 0,
    end: int | None = None,
) -> list[tuple[int, int]]:
    """Every match of a pattern in the clause ``terms[low:end]``, as (start, end) in ``terms``,
    or its group's spans (``runMatch`` on one clause). ``at``: the :class:`Index` of ``terms``,
    to try only where the first tokens can match."""
    tokens = compiled.tokens
    end = len(terms) if end is None else end
    if not tokens or end <= low:
        return []
    name = None if group is None else str(group)
    found: list[tuple[int, int, dict[str, list[int]]]] = []
    starts: Sequence[int]
    if compiled.anchored:
        starts = (low,)
    elif at is not None and compiled.keys is not None:
        cached = at.starts.get(id(compiled))
        if cached is None:
            cached = at.starts[id(compiled)] = _starts(at.positions, compiled.keys)
        starts = cached
        if low and starts and starts[0] < low:
            starts = starts[bisect_left(starts, low) :]
    else:
        starts = range(low, end)
    last_start = end if compiled.anchored else end - compiled.least
    lead = compiled.lead if at is not None else ()
    resume = low
    for i in starts:
        if i < resume:
            continue
        if i > last_start:
            break
        if lead and at is not None and not _leads(terms, at, i, end, lead):
            continue
        if compiled.simple:
            result = _simple_here(terms, i, tokens, low, end)
        else:
            result = from_here(terms, i, tokens, low, end)
        if result is not None:
            found.append((i, i + result[0], result[1]))
            if just_one:
                break
            resume = max(i + 1, i + result[0])
    if compiled.ends:
        found = [one for one in found if one[1] == end]
    if not_if is not None:
        found = [one for one in found if not _has(terms, not_if, one[0], one[1])]
    if name is not None:
        return [
            (start + g[0], start + g[0] + g[1])
            for start, _, groups in found
            if (g := groups.get(name)) is not None
        ]
    return [(start, stop) for start, stop, _ in found]


def _starts(positions: dict[str, list[int]], keys: frozenset[str]) -> list[int]:
    """Where a term holds one of ``keys``, in order."""
    if len(keys) <= len(positions):
        hits = [positions[key] for key in keys if key in positions]
    else:
        hits = [listed for key, listed in positions.items() if key in keys]
    return hits[0] if len(hits) == 1 else sorted({p for hit in hits for p in hit})


def _leads(terms: Sequence[Term], at: Index, i: int, end: int, lead) -> bool:
    """Whether the terms from ``i`` have the keys of the pattern's leading tokens."""
    if i + len(lead) > end:
        return False
    for offset, keys in enumerate(lead):
        if keys.isdisjoint(at.keys[i + offset]):
            return False
        if terms[i + offset].implicit and i + offset + 1 < end and terms[i + offset + 1].implicit:
            return True  # a word token may take both halves of a contraction
    return True


def _has(terms: Sequence[Term], compiled: Pattern, low: int, end: int) -> bool:
    return any(from_here(terms, i, compiled.tokens, low, end) is not None for i in range(low, end))

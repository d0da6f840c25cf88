"""compromise's match syntax (1-one/match): parsing patterns such as ``'[#Copula] #Adverb+?
#Gerund'`` and finding them in a clause of terms, with the same greedy and optional logic."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from evaldag.scorers._nlp_port._model import model
from evaldag.scorers._nlp_port._tokens import Term

Reg = dict[str, Any]

# --- parsing (1-one/match/methods/parseMatch) --------------------------------------------------

_BY_SLASHES = re.compile(r"(?:^|\s)([!\[^]*(?:<[^<]*>)?/.*?[^\\/]/[?\]+*$~]*)(?:\s|$)")
_BY_PARENTHESES = re.compile(r"([!~\[^]*(?:<[^<]*>)?\([^)]+[^\\)]\)[?\]+*$~]*)(?:\s|$)")
_MIN_MAX = re.compile(r"\{([0-9]+)?(, *[0-9]*)?\}")
_CAPTURE_NAME = re.compile(r"^<\s*(\S+)\s*>")


def _is_block(text: str) -> bool:
    return bool(re.match(r"^[!\[^]*(<[^<]*>)?\(", text) and re.search(r"\)[?\]+*$~]*$", text))


def _is_regex(text: str) -> bool:
    return bool(re.match(r"^[!\[^]*(<[^<]*>)?/", text) and re.search(r"/[?\]+*$~]*$", text))


def _blocks(text: str) -> list[str]:
    pieces: list[str] = []
    for piece in _BY_SLASHES.split(text):
        if _is_regex(piece):
            pieces.append(piece)
        else:
            pieces.extend(_BY_PARENTHESES.split(piece))
    pieces = [piece.strip() for piece in pieces if piece and piece.strip()]
    tokens: list[str] = []
    for piece in pieces:
        if _is_block(piece) or _is_regex(piece):
            tokens.append(piece)
        else:
            tokens.extend(piece.split(" "))
    return [token.strip() for token in tokens if token.strip()]


def _token(w: str) -> Reg:
    reg: Reg = {}
    for _ in range(2):
        if w.endswith("$"):
            reg["end"] = True
            w = w[:-1]
        if w.startswith("^"):
            reg["start"] = True
            w = w[1:]
        if w.endswith("?"):
            reg["optional"] = True
            w = w[:-1]
        if w.startswith("[") or w.endswith("]"):
            reg["group"] = None
            if w.startswith("["):
                reg["groupStart"] = True
            if w.endswith("]"):
                reg["groupEnd"] = True
            w = re.sub(r"^\[", "", w)
            w = re.sub(r"\]$", "", w)
            if w.startswith("<"):
                found = _CAPTURE_NAME.match(w)
                if found:
                    reg["group"] = found.group(1)
                    w = w.replace(found.group(0), "", 1)
        if w.endswith("+"):
            reg["greedy"] = True
            w = w[:-1]
        if w != "*" and w.endswith("*") and w != "\\*":
            reg["greedy"] = True
            w = w[:-1]
        if w.startswith("!"):
            reg["negative"] = True
            w = w[1:]
        if w.startswith("/") and w.endswith("/") and len(w) > 1:
            reg["regex"] = re.compile(w[1:-1])
            return reg
        if _MIN_MAX.search(w):
            w = _MIN_MAX.sub(lambda found: _min_max(reg, found), w, count=1)
        if w.startswith("(") and w.endswith(")"):
            operator = "and" if "&&" in w else "or"
            choices = w.split("&&") if operator == "and" else w.split("|")
            choices[0] = choices[0][1:]
            choices[-1] = choices[-1][:-1]
            reg["choices"] = [
                [_token(s) for s in choice.strip().split(" ")]
                for choice in choices
                if choice.strip()
            ]
            reg["operator"] = operator
            w = ""
        if w.startswith("<") and w.endswith(">"):
            reg["chunk"] = w[1:-1][:1].upper() + w[2:-1]
            reg["greedy"] = True
            return reg
        if w.startswith("%") and w.endswith("%") and len(w) > 1:
            reg["switch"] = w[1:-1]
            return reg
    if w.startswith("#"):
        reg["tag"] = w[1:2].upper() + w[2:]
    elif w.startswith("@"):
        reg["method"] = w[1:]
    elif w == ".":
        reg["anything"] = True
    elif w == "*":
        reg.update(anything=True, greedy=True, optional=True)
    elif w:
        reg["word"] = w.replace("\\*", "*", 1).replace("\\.", ".", 1).lower()
    return reg


def _min_max(reg: Reg, found: re.Match[str]) -> str:
    low, high = found.group(1), found.group(2)
    if high is None:
        reg["min"] = reg["max"] = int(low)
    else:
        high = re.sub(r", *", "", high, count=1)
        reg["min"] = 0 if low is None else int(low)
        reg["max"] = int(high) if low is None else int(high or 999)
    reg["greedy"] = True
    if not reg["min"]:
        reg["optional"] = True
    return ""


def _split_hyphens(regs: list[Reg], prefixes: frozenset[str]) -> list[Reg]:
    for i in range(len(regs) - 1, -1, -1):
        word = regs[i].get("word")
        if word and re.search("[a-z0-9][-\u2013\u2014][a-z]", word, re.IGNORECASE):
            words = re.split("[-\u2013\u2014]", word)
            if words[0] in prefixes:
                continue
            regs[i : i + 1] = [{**regs[i], "word": w} for w in words if w]
    return regs


def _fast_or(reg: Reg) -> Reg:
    choices = reg.get("choices")
    if choices is None or reg.get("operator") != "or" or reg.get("fuzzy"):
        return reg
    simple = all(
        len(block) == 1
        and not block[0].get("start")
        and not block[0].get("end")
        and "word" in block[0]
        and not block[0].get("negative")
        and not block[0].get("optional")
        for block in choices
    )
    if simple:
        reg["fastOr"] = frozenset(block[0]["word"] for block in choices)
        del reg["choices"]
    return reg


@cache
def parse(pattern: str) -> tuple[Reg, ...]:
    """The tokens of a match pattern (``parseMatch``)."""
    regs = _split_hyphens([_token(w) for w in _blocks(pattern)], model().prefixes)
    index = 0
    group = None
    for reg in regs:
        if reg.get("groupStart"):
            group = reg["group"]
            if group is None:
                group = str(index)
                index += 1
        if group is not None:
            reg["group"] = group
        if reg.get("groupEnd"):
            group = None
    return tuple(_fast_or(reg) for reg in regs)


# --- matching one term (1-one/match/methods/term/doesMatch.js) ---------------------------------

_TITLE_CASE = re.compile("^[^\\W\\d_a-z][a-z'\u00c0-\u00ff]")
_START_QUOTE = re.compile(
    "[\u0022\uff02\u0027\u201c\u2018\u201f\u201b\u201e\u2e42\u201a\u00ab\u2039\u2035\u2036\u2037\u301d\u0060\u301f]"
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


def _does_match(term: Term, reg: Reg, index: int, length: int) -> bool:
    if reg.get("anything"):
        return True
    if reg.get("start") and index != 0:
        return False
    if reg.get("end") and index != length - 1:
        return False
    word = reg.get("word")
    if word is not None:
        if term.machine is not None and term.machine == word:
            return True
        if term.alias and word in term.alias:
            return True
        return word == term.text or word == term.normal
    if "tag" in reg:
        return reg["tag"] in term.tags
    if "method" in reg:
        return _method(reg["method"], term)
    if "regex" in reg:
        return bool(reg["regex"].search(term.normal))
    if "chunk" in reg:
        return term.chunk == reg["chunk"]
    if "switch" in reg:
        return term.switch == reg["switch"]
    fast_or = reg.get("fastOr")
    if fast_or is not None:
        form = term.implicit or term.machine or term.normal
        return form in fast_or or term.text in fast_or
    # A slow (a b|c) block never matches a lone term: compromise passes it a list of blocks.
    return False


def matches(term: Term, reg: Reg, index: int, length: int) -> bool:
    """Whether one term matches one token, negation included (``wrapMatch``)."""
    found = _does_match(term, reg, index, length)
    return not found if reg.get("negative") else found


# --- matching a sequence of tokens (1-one/match/methods/match) ---------------------------------


class _State:
    __slots__ = ("terms", "size", "t", "r", "regs", "groups", "start", "length", "group", "grouped")

    def __init__(self, terms: Sequence[Term], regs: Sequence[Reg], start: int, length: int):
        self.terms = terms
        self.size = len(terms)
        self.t = 0
        self.r = 0
        self.regs = regs
        self.groups: dict[str, list[int]] = {}
        self.start = start
        self.length = length
        self.group: str | None = None
        self.grouped = False

    def term_matches(self, offset: int, reg: Reg | None) -> bool:
        if reg is None or offset >= self.size:
            return False
        return matches(self.terms[offset], reg, self.start + offset, self.length)

    def group_at(self, index: int) -> list[int]:
        """The current capture group as [start, length], opened at ``index`` if new."""
        assert self.group is not None
        found = self.groups.get(self.group)
        if found is None:
            found = self.groups[self.group] = [index, 0]
        return found

    def next_reg(self, ahead: int = 1) -> Reg | None:
        index = self.r + ahead
        return self.regs[index] if index < len(self.regs) else None


def _greedy_end(state: _State, end_reg: Reg | None) -> int | None:
    reg = {**state.regs[state.r], "start": False, "end": False}
    first = state.t
    low, high = reg.get("min"), reg.get("max")
    while state.t < state.size:
        count = state.t - first + 1
        if end_reg is not None and state.term_matches(state.t, end_reg):
            if low is None or count >= low:
                return state.t
        if high is not None and count == high:
            return state.t
        if not state.term_matches(state.t, reg):
            if low is not None and count < low:
                return None
            return state.t
        state.t += 1
    if low is not None and state.t - first + 1 < low:
        return None
    return state.t


def _simple_match(state: _State) -> bool:
    reg = state.regs[state.r]
    start_at = state.t
    term = state.terms[state.t]
    nxt = state.next_reg()
    if reg.get("optional") and nxt is not None and reg.get("negative"):
        return True
    if reg.get("optional") and nxt is not None:
        # 'foo? foo': skip the next token when it matches this term but not the next one
        if reg.get("negative") or state.term_matches(state.t, nxt):
            if not state.term_matches(state.t + 1, nxt):
                state.r += 1
    if term.implicit and state.t + 1 < state.size:
        following = state.terms[state.t + 1]
        current = state.regs[state.r]
        if following.implicit:
            if current.get("word") == term.normal:
                state.t += 1
            if current.get("method") == "hasContraction":
                state.t += 1
    state.t += 1
    if reg.get("end") and state.t != state.size and not reg.get("greedy"):
        return False
    if reg.get("greedy"):
        end = _greedy_end(state, state.next_reg())
        if end is None:
            return False
        state.t = end
        if state.regs[state.r].get("end") and state.start + state.t != state.length:
            return False
    if state.grouped:
        group = state.group_at(start_at)
        if state.t > 1 and state.regs[state.r].get("greedy"):
            group[1] += state.t - start_at
        else:
            group[1] += 1
    return True


def _choice_length(state: _State, block: list[Reg], skip: int) -> int:
    size = 0
    for reg in block:
        t = state.t + skip + size
        if t >= state.size or not state.term_matches(t, reg):
            return 0
        size += 1
        if reg.get("greedy"):
            repeated = {**reg, "start": False, "end": False}
            for i in range(t + 1, state.size):
                if not state.term_matches(i, repeated):
                    break
                size += 1
    return size


def _choices_length(state: _State, skip: int) -> int:
    for block in state.regs[state.r]["choices"]:
        size = _choice_length(state, block, skip)
        if size > 0:
            return size
    return 0


def _or_length(state: _State) -> int:
    skip = _choices_length(state, 0)
    if skip and state.regs[state.r].get("greedy"):
        more = _choices_length(state, skip)
        while more > 0:
            skip += more
            more = _choices_length(state, skip)
    return skip


def _and_length(state: _State) -> int:
    longest = 0
    for block in state.regs[state.r]["choices"]:
        for index, reg in enumerate(block):
            if not state.term_matches(state.t + index, reg):
                return 0
        longest = max(longest, len(block))
    return longest


def _block(state: _State, size: int) -> bool:
    reg = state.regs[state.r]
    if size:
        if reg.get("negative"):
            return False
        if state.grouped:
            state.group_at(state.t)[1] += size
        if reg.get("end") and state.t + state.start + size != state.length:
            return False
        state.t += size
        return True
    if reg.get("negative"):
        if not reg.get("optional"):
            state.t += 1
        return True
    return bool(reg.get("optional"))


def _negative(state: _State) -> bool:
    reg = state.regs[state.r]
    positive = {**reg, "negative": False}
    if state.term_matches(state.t, positive):
        return False
    if reg.get("optional"):
        nxt = state.next_reg()
        if nxt is not None:
            if state.term_matches(state.t, nxt):
                state.r += 1
            elif nxt.get("optional") and state.next_reg(2) is not None:
                if state.term_matches(state.t, state.next_reg(2)):
                    state.r += 2
    if reg.get("greedy"):
        end_reg = state.next_reg()
        skip = 0
        high = positive.get("max")
        for t in range(state.t, state.size):
            if state.term_matches(t, positive):
                break
            if end_reg is not None and state.term_matches(t, end_reg):
                break
            skip += 1
            if high is not None and skip == high:
                break
        if skip == 0 or (positive.get("min") or 0) > skip:
            return False
        state.t += skip
        return True
    state.t += 1
    return True


def _anything_greedy(state: _State) -> bool:
    reg = state.regs[state.r]
    end_reg = state.next_reg()
    if end_reg is None:
        skip_to: int | None = state.size
    else:
        skip_to = next(
            (t for t in range(state.t, state.size) if state.term_matches(t, end_reg)), None
        )
    if not skip_to:
        return False
    if reg.get("min") is not None and skip_to - state.t < reg["min"]:
        return False
    if reg.get("max") is not None and skip_to - state.t > reg["max"]:
        state.t += reg["max"]
        return True
    if state.grouped:
        state.group_at(state.t)[1] += skip_to - state.t
    state.t = skip_to
    return True


def _end_greedy(reg: Reg, state: _State) -> bool:
    if reg.get("end") and reg.get("greedy") and state.start + state.t < state.length - 1:
        return state.term_matches(state.t, {**reg, "end": False})
    return False


def from_here(
    terms: Sequence[Term], regs: Sequence[Reg], start: int, length: int
) -> tuple[int, int, dict[str, tuple[int, int]]] | None:
    """The match of ``regs`` beginning at ``terms[0]``: (start, end, groups), or None."""
    if not terms or not regs:
        return None
    state = _State(terms, regs, start, length)
    while state.r < len(regs):
        reg = regs[state.r]
        state.grouped = bool(reg.get("group"))
        state.group = reg.get("group") if state.grouped else None
        if state.t >= state.size:
            if any(not remain.get("optional") for remain in regs[state.r :]):
                return None
            break
        if reg.get("anything") and reg.get("greedy"):
            alive = _anything_greedy(state)
        elif "choices" in reg and reg.get("operator") == "or":
            alive = _block(state, _or_length(state))
        elif "choices" in reg and reg.get("operator") == "and":
            alive = _block(state, _and_length(state))
        elif reg.get("anything"):
            alive = not reg.get("negative") and _simple_match(state)
        elif _end_greedy(reg, state):
            alive = _simple_match(state)
        elif reg.get("negative"):
            alive = _negative(state)
        elif state.term_matches(state.t, reg):
            alive = _simple_match(state)
        else:
            alive = bool(reg.get("optional"))
        if not alive:
            return None
        state.r += 1
    if state.t == 0:
        return None
    groups = {
        name: (start + first, start + first + size) for name, (first, size) in state.groups.items()
    }
    return start, start + state.t, groups


Match = tuple[int, int, dict[str, tuple[int, int]]]


def find(
    terms: Sequence[Term],
    regs: Sequence[Reg],
    group: str | None = None,
    just_one: bool = False,
    not_if: Sequence[Reg] | None = None,
) -> list[tuple[int, int]]:
    """Every match of ``regs`` in a clause, as (start, end), or the group's spans
    (``runMatch`` on one clause)."""
    if not regs:
        return []
    found: list[Match] = []
    size = len(terms)
    if regs[0].get("start"):
        result = from_here(terms, regs, 0, size)
        if result is not None:
            found.append(result)
    else:
        least = sum(1 for reg in regs if not reg.get("optional") and not reg.get("negative"))
        i = 0
        while i < size:
            if size - i < least:
                break
            result = from_here(terms[i:], regs, i, size)
            if result is not None:
                found.append(result)
                if just_one:
                    break
                end = result[1]
                if abs(end - 1) > i:
                    i = abs(end - 1)
            i += 1
    if regs[-1].get("end"):
        found = [result for result in found if result[1] == size]
    if not_if:
        found = [result for result in found if not _has(terms[result[0] : result[1]], not_if)]
    if group is not None:
        return [result[2][group] for result in found if group in result[2]]
    return [(first, end) for first, end, _ in found]


def _has(terms: Sequence[Term], regs: Sequence[Reg]) -> bool:
    size = len(terms)
    return any(from_here(terms[i:], regs, i, size) is not None for i in range(size))

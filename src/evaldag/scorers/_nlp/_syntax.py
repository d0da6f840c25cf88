"""compromise's match syntax (1-one/match/methods/parseMatch): patterns such as
``'[#Copula] #Adverb+? #Gerund'`` parsed, compiled to tokens, and the index of a clause's terms
that says where a pattern may start."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from evaldag.scorers._nlp._model import model
from evaldag.scorers._nlp._tokens import Term

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


# --- compiled tokens ---------------------------------------------------------------------------

ANYTHING, WORD, TAG, METHOD, REGEX, CHUNK, SWITCH, FAST_OR, CHOICES = range(9)


class Token:
    """A parsed match token, with attributes instead of keys (matching is the hot loop)."""

    __slots__ = (
        "kind", "start", "end", "optional", "negative", "greedy", "group", "min", "max", "value",
        "choices", "conjunction", "keys",
    )  # fmt: skip

    def __init__(self, reg: Reg | None) -> None:
        if reg is None:  # a copy's blank, filled by :meth:`copy`
            return
        self.start = bool(reg.get("start"))
        self.end = bool(reg.get("end"))
        self.optional = bool(reg.get("optional"))
        self.negative = bool(reg.get("negative"))
        self.greedy = bool(reg.get("greedy"))
        self.group: str | None = reg.get("group") or None
        self.min: int | None = reg.get("min")
        self.max: int | None = reg.get("max")
        self.choices: tuple[tuple[Token, ...], ...] = ()
        self.conjunction = reg.get("operator") == "and"
        self.value: Any = None
        if reg.get("anything"):
            self.kind = ANYTHING
        elif "word" in reg:
            self.kind, self.value = WORD, reg["word"]
        elif "tag" in reg:
            self.kind, self.value = TAG, reg["tag"]
        elif "method" in reg:
            self.kind, self.value = METHOD, reg["method"]
        elif "regex" in reg:
            self.kind, self.value = REGEX, reg["regex"]
        elif "chunk" in reg:
            self.kind, self.value = CHUNK, reg["chunk"]
        elif "switch" in reg:
            self.kind, self.value = SWITCH, reg["switch"]
        elif "fastOr" in reg:
            self.kind, self.value = FAST_OR, reg["fastOr"]
        else:
            self.kind = CHOICES
            self.choices = tuple(tuple(Token(one) for one in block) for block in reg["choices"])
        self.keys = self._keys()

    def copy(
        self, start: bool | None = None, end: bool | None = None, negative: bool | None = None
    ) -> Token:
        """The token with some of its flags changed (every attribute spelled out: a compiled
        class has no ``__slots__`` to loop over)."""
        twin = Token(None)
        twin.kind = self.kind
        twin.start = self.start if start is None else start
        twin.end = self.end if end is None else end
        twin.optional = self.optional
        twin.negative = self.negative if negative is None else negative
        twin.greedy = self.greedy
        twin.group = self.group
        twin.min = self.min
        twin.max = self.max
        twin.value = self.value
        twin.choices = self.choices
        twin.conjunction = self.conjunction
        twin.keys = self.keys
        return twin

    def _keys(self) -> frozenset[str] | None:
        """Index keys one of which a term this token matches has; None: any term may match."""
        if self.negative or self.optional:
            return None
        if self.kind == WORD:
            return frozenset([self.value])
        if self.kind == TAG:
            return frozenset(["#" + self.value])
        if self.kind == FAST_OR:
            return frozenset(self.value)
        if self.kind == SWITCH:
            return frozenset([f"%{self.value}%"])
        if self.kind == CHUNK:
            return frozenset([f"<{self.value}>"])
        if self.kind == CHOICES and self.choices:
            blocks = self.choices[:1] if self.conjunction else self.choices
            keys: set[str] = set()
            for block in blocks:
                found = block[0].keys if block else None
                if found is None:
                    return None
                keys |= found
            return frozenset(keys)
        return None


class Pattern:
    """A compiled match pattern, with what a clause must hold for it to match: ``needs`` (for
    each required token, the keys one of which some term has) and ``lead`` (the keys of the
    first few tokens, which match one term each, in order)."""

    __slots__ = ("tokens", "least", "keys", "anchored", "ends", "needs", "lead", "simple")

    def __init__(self, regs: Sequence[Reg]) -> None:
        self.tokens = tuple(Token(reg) for reg in regs)
        self.least = sum(1 for t in self.tokens if not t.optional and not t.negative)
        self.keys = self.tokens[0].keys if self.tokens else None
        self.anchored = bool(self.tokens) and self.tokens[0].start
        self.ends = bool(self.tokens) and self.tokens[-1].end
        self.needs = tuple(token.keys for token in self.tokens if token.keys is not None)
        lead: list[frozenset[str]] = []
        for token in self.tokens:
            if token.keys is None or token.kind == CHOICES or token.greedy:
                break
            lead.append(token.keys)
            if token.end:
                break
        self.lead = tuple(lead)
        self.simple = all(_one_term(token) for token in self.tokens)

    def possible(self, at: Index) -> bool:
        """Whether a clause with this index may hold a match."""
        found = at.possible.get(id(self))
        if found is None:
            keys = at.positions.keys()
            found = at.possible[id(self)] = all(not keys.isdisjoint(need) for need in self.needs)
        return found


def _one_term(token: Token) -> bool:
    """Whether a token always takes exactly one term, matched by a test on that term alone."""
    if token.optional or token.negative or token.greedy:
        return False
    if token.kind != CHOICES:
        return True
    return all(len(block) == 1 and not block[0].greedy for block in token.choices)


@cache
def pattern(text: str) -> Pattern:
    """A compiled match pattern, cached."""
    return Pattern(parse(text))


class _TagKeys(dict):
    def __missing__(self, tag: str) -> str:
        self[tag] = key = "#" + tag
        return key


TAG_KEYS = _TagKeys()


def index_keys(term: Term) -> list[str]:
    """The keys under which a term is indexed: its forms, tags, switch and chunk."""
    keys = list(map(_TAG_KEY, term.tags))
    for form in (term.normal, term.machine, term.implicit, term.text):
        if form:
            keys.append(form)
    if term.alias:
        keys.extend(term.alias)
    if term.switch:
        keys.append(f"%{term.switch}%")
    if term.chunk:
        keys.append(f"<{term.chunk}>")
    return keys


_TAG_KEY = TAG_KEYS.__getitem__


class Index:
    """A clause's terms by key (``positions``) and each term's keys (``keys``)."""

    __slots__ = ("positions", "keys", "possible", "starts")

    def __init__(self, terms: Sequence[Term]) -> None:
        self.possible: dict[int, bool] = {}
        #: where each pattern (by id) may start: the terms holding a key of its first token
        self.starts: dict[int, list[int]] = {}
        positions: dict[str, list[int]] = {}
        found = positions.get
        self.keys = all_keys = list(map(index_keys, terms))
        for position, keys in enumerate(all_keys):
            for key in keys:
                listed = found(key)
                if listed is None:
                    positions[key] = [position]
                elif listed[-1] != position:
                    listed.append(position)
        self.positions = positions

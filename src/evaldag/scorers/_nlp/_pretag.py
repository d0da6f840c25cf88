"""compromise's pre-tagger: each word by its case, suffix, regexes and prefix, then by its
neighbours, switches and fallbacks (2-two/preTagger/compute/tagger)."""

from __future__ import annotations

import re
from functools import lru_cache

from evaldag.scorers._nlp._lexicon import Clause, _word, clauses, freeze, lexicon
from evaldag.scorers._nlp._model import Model, model
from evaldag.scorers._nlp._tags import fast_tag, set_tag
from evaldag.scorers._nlp._tokens import Term

# --- pre-tagger, second pass: each word alone (2-two/preTagger/compute/tagger/2nd-pass) --------

_SWITCH_PREFIX = re.compile("^(under|over|mis|re|un|dis|semi)-?")
_NOT_PROPER = ("Date", "Month", "WeekDay", "Unit", "Expression")
_ROMAN = re.compile("^[IVXLCDM]{2,}$")
_ROMAN_VALID = re.compile("^M{0,4}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_NOT_ROMAN = frozenset(["li", "dc", "md", "dm", "ml"])
_DIGIT = re.compile("[0-9]")
_APOSTROPHE = re.compile("['\u2018\u2019\u201b\u2035\u2032`\u00b4]")
_GUESSED_TENSE = {
    **dict.fromkeys(
        "ate ize tion rify then ress ify age nce ect ise ine ish ace ash ure tch end ack and ute "
        "ade ock ite ase ose use ive int nge lay est ain ant ent eed er le unk ung upt en".split(),
        "Infinitive",
    ),
    "ing": "Gerund",
    **dict.fromkeys("ept ed lt nt ew ld".split(), "PastTense"),
    **dict.fromkeys(
        "rks cks nks ngs mps tes zes ers les lls els ils ows nds ays ams ars ops ffs als urs lds "
        "ews ips es ts ns".split(),
        "PresentTense",
    ),
    **dict.fromkeys(["ken", "wn"], "Participle"),
}
_NOT_PLURAL_ENDS = (
    "bus mas was ias xas vas cis lis nis ois ris sis tis xis aus cus eus fus gus ius lus nus das "
    "ous pus rus sus tus xus aos igos ados ogos 's ss"
).split()
_PLURAL_ENDS = {
    "e": ("mice", "louse", "antennae", "formulae", "nebulae", "vertebrae", "vitae"),
    "i": ("tia", "octopi", "viri", "radii", "nuclei", "fungi", "cacti", "stimuli"),
    "n": ("men",),
    "t": ("feet",),
}
_UNCOUNTABLE = (
    "Acronym", "Abbreviation", "ProperNoun", "Uncountable", "Possessive", "Pronoun", "Activity",
    "Honorific", "Month",
)  # fmt: skip


def guessed_tense(word: str) -> str | None:
    """A verb's tense guessed from its ending (``getTense``)."""
    for size in (3, 2):
        found = _GUESSED_TENSE.get(word[-size:])
        if found:
            return found
    return "PresentTense" if word.endswith("s") else None


def looks_plural(word: str) -> bool:
    if not word or len(word) <= 3:
        return False
    if word in ("israelis", "menus", "logos"):
        return True
    last = word[-1]
    if last in _PLURAL_ENDS:
        return any(word.endswith(end) for end in _PLURAL_ENDS[last])
    return last == "s" and not any(word.endswith(end) for end in _NOT_PLURAL_ENDS)


def fill_tags(term: Term, model: Model) -> None:
    """Add the parents of a term's tags, a noun's number and a bare verb's tense."""
    tags = term.tags
    if not term.frozen:
        parents = model.parent_tags
        for tag in list(tags):
            for parent in parents.get(tag, ()):
                tags[parent] = None
    if "Noun" in tags and "Plural" not in tags and "Singular" not in tags:
        if not any(tag in tags for tag in _UNCOUNTABLE):
            fast_tag(term, "Plural" if looks_plural(term.normal) else "Singular")
    if "Verb" in tags and len(tags) == 1:
        guess = guessed_tense(term.normal)
        if guess:
            fast_tag(term, guess)


def _is_title_case(text: str) -> bool:
    return len(text) > 1 and text[0].isupper() and (text[1].islower() or text[1] in "'\u2019")


_QUOTE_END = re.compile("[\"']$")
_ROMAN_LETTER = re.compile("[IVX]")


def _check_case(term: Term, model: Model) -> None:
    text = term.text
    if term.index != 0 and _is_title_case(text) and not _DIGIT.search(text):
        if any(tag in term.tags for tag in _NOT_PROPER):
            return
        if _QUOTE_END.search(term.pre) or term.normal == "the":
            return
        fill_tags(term, model)
        if "Noun" not in term.tags and not term.frozen:
            term.tags.clear()
        fast_tag(term, "ProperNoun")
        return
    if (
        len(text) >= 2
        and _ROMAN.match(text)
        and _ROMAN_LETTER.search(text)
        and _ROMAN_VALID.match(text)
        and term.normal not in _NOT_ROMAN
    ):
        fast_tag(term, "RomanNumeral")


@lru_cache(maxsize=65536)
def _by_suffix(word: str) -> str | None:
    patterns = model().suffix_patterns
    size = len(word)
    for i in range(min(7, size - 1), 1, -1):
        tag = patterns[i].get(word[size - i :])
        if tag is not None:
            return tag
    return None


@lru_cache(maxsize=65536)
def _by_prefix(word: str) -> str | None:
    patterns = model().prefix_patterns
    for i in range(min(7, len(word) - 3), 2, -1):
        tag = patterns[i].get(word[:i])
        if tag is not None:
            return tag
    return None


@lru_cache(maxsize=65536)
def _regex_tag(text: str, normal: str, untagged: bool):
    """The tag of the first of compromise's regexes the word matches (``checkRegex``)."""
    data = model()
    tag = next((tag for regex, tag in data.regex_text if regex.search(text)), None)
    if tag is None:
        tag = next((tag for regex, tag in data.regex_normal if regex.search(normal)), None)
    if tag is None and _DIGIT.search(normal):
        tag = next((tag for regex, tag in data.regex_numbers if regex.search(normal)), None)
    if tag is None and untagged and normal:
        rules = data.ends_with.get(normal[-1], ())
        tag = next((tag for regex, tag in rules if regex.search(normal)), None)
    return tag


def _by_regex(term: Term, model: Model) -> None:
    text = term.text
    if _APOSTROPHE.search(term.post) and not _APOSTROPHE.search(term.pre):
        text += term.post.strip()
    tag = _regex_tag(text, term.machine or term.normal, not term.tags)
    if tag is not None:
        set_tag([term], tag, model)


_YEAR_WORDS = frozenset(
    "in on by until for to during throughout through within before after of this next last "
    "circa around post pre budget classic plan may".split()
)
_DATE_TAGS = ("Date", "Month", "WeekDay", "Year")


def _check_year(terms: Clause, i: int) -> None:
    term = terms[i]
    tags = term.tags
    if not ("NumericValue" in tags and "Cardinal" in tags and len(term.normal) == 4):
        return
    try:
        number = float(term.normal)
    except ValueError:
        return
    if not 1400 < number < 2100:
        return
    last = terms[i - 1] if i > 0 else None
    nxt = terms[i + 1] if i + 1 < len(terms) else None

    def good(other: Term | None) -> bool:
        if other is None:
            return False
        if (other.normal or other.implicit) in _YEAR_WORDS:
            return True
        return any(tag in other.tags for tag in (*_DATE_TAGS, "ProperNoun"))

    def okay(other: Term | None) -> bool:
        if other is None:
            return False
        if "Ordinal" in other.tags or other.normal in ("is", "was"):
            return True
        return "Cardinal" in other.tags and len(other.normal) < 3

    def fine(other: Term | None) -> bool:
        return other is not None and any(tag in other.tags for tag in _DATE_TAGS)

    if good(last) or good(nxt):
        fast_tag(term, "Year")
    elif 1920 <= number < 2025:
        far_last = terms[i - 2] if i > 1 else None
        far_next = terms[i + 2] if i + 2 < len(terms) else None
        if okay(last) or okay(nxt) or fine(far_last) or fine(far_next):
            fast_tag(term, "Year")
        elif last is not None and ("Determiner" in last.tags or "Possessive" in last.tags):
            if nxt is not None and "Noun" in nxt.tags and "Plural" not in nxt.tags:
                fast_tag(term, "Year")


def _second_pass(terms: Clause, model: Model, yelling: bool) -> None:
    for i, term in enumerate(terms):
        if term.frozen:
            continue
        normal = term.normal
        if normal in model.switches:
            term.switch = model.switches[normal]
        elif _SWITCH_PREFIX.match(normal):
            stem = _SWITCH_PREFIX.sub("", normal, count=1)
            if len(stem) > 3 and stem in model.switches:
                term.switch = model.switches[stem]
        if not yelling:
            _check_case(term, model)
        if not term.tags:
            tag = _by_suffix(normal)
            if tag is None and term.implicit:
                tag = _by_suffix(term.implicit)
            if tag is not None:
                fast_tag(term, tag)
        _by_regex(term, model)
        if not term.tags:
            tag = _by_prefix(normal)
            if tag is not None:
                fast_tag(term, tag)
        _check_year(terms, i)


# --- pre-tagger, third pass: neighbours (2-two/preTagger/compute/tagger/3rd-pass) --------------

_ONE_LETTER_ACRONYM = re.compile("^[A-Z]('s|,)?$")
_UPPER = re.compile("^[A-Z-]+$")
_UPPER_THEN_S = re.compile("^[A-Z]+s$")
_ACRONYMS = (
    re.compile(r"([A-Z]\.)+[A-Z]?,?$"),
    re.compile(r"([a-z]\.)+[a-z]\.?$"),
    _ONE_LETTER_ACRONYM,
    re.compile("[A-Z]{2,}('s|,)?$"),
)
_PLACE_ACRONYMS = frozenset(["la", "ny", "us", "dc", "gb", "uk"])
_WEAK_TAGS = ("Hyphenated", "HashTag", "Prefix", "SlashedTerm")


def _no_period_acronym(term: Term, model: Model) -> bool:
    text = term.text
    if not _UPPER.match(text):
        if len(text) > 3 and _UPPER_THEN_S.match(text):
            text = text[:-1]
        else:
            return False
    elif term.normal in _PLACE_ACRONYMS:
        return True
    if len(text) > 5 or text in ("I", "A") or term.normal in model.lexicon:
        return False
    return any(form.search(text) for form in _ACRONYMS)


def _check_acronym(term: Term, model: Model) -> bool:
    tags = term.tags
    if "RomanNumeral" in tags or "Acronym" in tags or term.frozen:
        return False
    if _no_period_acronym(term, model):
        tags.clear()
        fast_tag(term, ("Acronym", "Noun"))
        if term.normal in _PLACE_ACRONYMS:
            fast_tag(term, "Place")
        if _UPPER_THEN_S.match(term.text):
            fast_tag(term, "Plural")
        return True
    if term.text not in ("I", "A") and _ONE_LETTER_ACRONYM.match(term.text):
        tags.clear()
        fast_tag(term, ("Acronym", "Noun"))
        return True
    if "Organization" in tags and (
        len(term.text) <= 3 or _UPPER.match(term.text) and len(term.text) <= 6
    ):
        fast_tag(term, "Acronym")
        return True
    return False


def _neighbour(terms: Clause, i: int, model: Model) -> bool:
    term = terms[i]
    if term.tags:
        return False
    before = terms[i - 1] if i > 0 else None
    after = terms[i + 1] if i + 1 < len(terms) else None
    tag = None
    if before is not None:
        tag = model.left_words.get(before.normal)
    if tag is None and after is not None:
        tag = model.right_words.get(after.normal)
    if tag is None and before is not None:
        tag = next((found for has, found in model.left_tags if has in before.tags), None)
    if tag is None and after is not None:
        tag = next((found for has, found in model.right_tags if has in after.tags), None)
    if tag is None:
        return False
    fast_tag(term, tag)
    fill_tags(term, model)
    return True


def _fallback(term: Term, model: Model) -> None:
    tags = term.tags
    if not tags or len(tags) == 1 and any(tag in tags for tag in _WEAK_TAGS):
        fast_tag(term, "Noun")
        fill_tags(term, model)


def _org_like(term: Term | None, i: int, yelling: bool) -> bool:
    if term is None or "FirstName" in term.tags or "Place" in term.tags:
        return False
    if any(tag in term.tags for tag in ("ProperNoun", "Organization", "Acronym")):
        return True
    if not yelling and _is_title_case(term.text):
        return "Singular" in term.tags if i == 0 else True
    return False


def _org_words(terms: Clause, i: int, model: Model, yelling: bool) -> None:
    if _word(terms[i]) in model.org_words and _org_like(
        terms[i - 1] if i > 0 else None, i - 1, yelling
    ):
        set_tag([terms[i]], "Organization", model)
        for t in range(i, -1, -1):
            if not _org_like(terms[t], t, yelling):
                break
            set_tag([terms[t]], "Organization", model)


_PLACE_CONTINUES = frozenset(
    "athletic city community eastern federal financial great historic historical local memorial "
    "municipal national northern provincial southern state western spring pine sunset view oak "
    "maple spruce cedar willow".split()
)
_NO_PLACE_AFTER = frozenset(["center", "centre", "way", "range", "bar", "bridge", "field", "pit"])


def _place_like(term: Term, i: int, yelling: bool) -> bool:
    tags = term.tags
    if "Organization" in tags or "Possessive" in tags or term.normal.endswith("'s"):
        return False
    if "ProperNoun" in tags or "Place" in tags:
        return True
    if not yelling and _is_title_case(term.text):
        return "Singular" in tags if i == 0 else True
    return False


def _place_words(terms: Clause, i: int, model: Model, yelling: bool) -> None:
    word = _word(terms[i])
    if word not in model.place_words:
        return
    for n in range(i - 1, -1, -1):
        if terms[n].normal in _PLACE_CONTINUES:
            continue
        if _place_like(terms[n], n, yelling):
            set_tag(terms[n : i + 1], "Place", model)
            continue
        break
    if word in _NO_PLACE_AFTER:
        return
    for n in range(i + 1, len(terms)):
        if _place_like(terms[n], n, yelling):
            set_tag(terms[i : n + 1], "Place", model)
            return
        if terms[n].normal != "of" and terms[n].normal not in _PLACE_CONTINUES:
            break


def _sorted_tags(term: Term, model: Model) -> list[str]:
    return sorted(term.tags, key=lambda tag: -len(model.parents(tag)))


def _clue(term: Term | None, clues: dict[str, str], model: Model, by_tag: bool) -> str | None:
    if term is None:
        return None
    if not by_tag:
        return clues.get(term.normal or term.implicit or "")
    return next((clues[tag] for tag in _sorted_tags(term, model) if clues.get(tag)), None)


_CAPITALISED = re.compile("^[A-Z][a-z]")


def _capital(term: Term) -> bool:
    return "ProperNoun" in term.tags and bool(_CAPITALISED.match(term.text))


def _adhoc(form: str, terms: Clause, i: int) -> str | None:
    """compromise's extra leanings for some switches (3rd-pass/_adhoc.js)."""
    term = terms[i]
    alone = i == 0 and len(terms) == 1
    if form in (
        "Adj|Gerund",
        "Actor|Verb",
        "Adj|Past",
        "Adj|Present",
        "Noun|Gerund",
        "Person|Noun",
    ):
        return "Noun" if _capital(term) else None
    if form == "Adj|Noun":
        if _capital(term):
            return "Noun"
        if i + 1 == len(terms) and i > 0 and "Determiner" in terms[i - 1].tags:
            return "Noun"
        return None
    if form == "Noun|Verb":
        if i > 0 and _capital(term):
            return "Noun"
        return "Infinitive" if alone else None
    if form == "Plural|Verb":
        if _capital(term):
            return "Noun"
        if alone:
            return "PresentTense"
        return "Plural" if i == 0 and len(terms) > 3 else None
    if form == "Person|Verb":
        return ("Noun" if _capital(term) else None) if i != 0 else None
    if form == "Person|Adj":
        if i == 0 and len(terms) > 1:
            return "Person"
        return "Person" if _capital(term) else None
    return None


def _switch(terms: Clause, i: int, model: Model) -> None:
    term = terms[i]
    form = term.switch
    if not form or "Acronym" in term.tags or "PhrasalVerb" in term.tags:
        return
    clues = model.clues.get(form)
    tag = None
    if clues is not None:
        before_at = i - 1
        if i > 0 and terms[i - 1].text == "also":
            before_at = max(0, i - 2)
        before = terms[before_at] if before_at >= 0 else None
        after = terms[i + 1] if i + 1 < len(terms) else None
        tag = (
            _clue(after, clues.get("afterWords", {}), model, False)
            or _clue(before, clues.get("beforeWords", {}), model, False)
            or _clue(before, clues.get("beforeTags", {}), model, True)
            or _clue(after, clues.get("afterTags", {}), model, True)
        )
    tag = _adhoc(form, terms, i) or tag
    if tag:
        set_tag([term], tag, model)
        fill_tags(term, model)


_VERB_TYPES = ("PastTense", "PresentTense", "Auxiliary", "Modal", "Particle")
_BESIDE = frozenset(["there", "this", "it", "him", "her", "us"])


def _imperative(terms: Clause, model: Model) -> None:
    first = terms[0]
    if not (first.switch == "Noun|Verb" or "Infinitive" in first.tags) or len(terms) < 2:
        return
    if len(terms) < 4 and terms[1].normal not in _BESIDE:
        return
    if "PhrasalVerb" not in first.tags and first.normal in model.multi:
        return
    if "Noun" in terms[1].tags or "Determiner" in terms[1].tags:
        if not any("Verb" in t.tags for t in terms[1:3]):
            set_tag([first], "Imperative", model)


def _third_pass(terms: Clause, model: Model, yelling: bool) -> None:
    for i, term in enumerate(terms):
        found = _check_acronym(term, model)
        fill_tags(term, model)
        if not found and not _neighbour(terms, i, model):
            _fallback(term, model)
    for i, term in enumerate(terms):
        if term.frozen:
            continue
        _org_words(terms, i, model, yelling)
        _place_words(terms, i, model, yelling)
        _switch(terms, i, model)
        if "Verb" in term.tags and not any(tag in term.tags for tag in _VERB_TYPES):
            set_tag([term], "Infinitive", model)
        if term.post == "-" and i + 1 < len(terms):
            set_tag(terms[i : i + 2], "Hyphenated", model)
    _imperative(terms, model)


_LOWER_START = re.compile("^[a-z]")


def _yelling(terms: Clause) -> bool:
    if sum(1 for t in terms if "ProperNoun" not in t.tags) <= 3:
        return False
    return not any(_LOWER_START.match(t.text) for t in terms)


def pre_tag(doc: list[Clause], model: Model) -> None:
    """compromise's pre-tagger: colons, then per clause each word alone, then neighbours."""
    for terms in doc:
        if len(terms) >= 3 and ":" in terms[0].post:
            after = terms[1].tags
            if not any(tag in after for tag in ("Value", "Email", "PhoneNumber")):
                set_tag(terms[:1], "Expression", model)
    for terms in clauses(doc):
        yelling = _yelling(terms)
        _second_pass(terms, model, yelling)
        _third_pass(terms, model, yelling)


def tag_words(doc: list[Clause], model: Model, thaw: bool = True) -> None:
    """compromise's frozen words, lexicon and pre-tagger on a document (``freeze``, ``lexicon``,
    ``preTagger``), frozen words thawed after when ``thaw``."""
    freeze(doc, model)
    lexicon(doc, model)
    pre_tag(doc, model)
    if thaw:
        for terms in doc:
            for term in terms:
                term.frozen = False

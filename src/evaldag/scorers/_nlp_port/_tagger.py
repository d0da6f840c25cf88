"""compromise's tagger: lexicon, pre-tagger (case, suffixes, regexes, neighbours, switches) and
post-tagger (its 570 match rules), as in 2-two/preTagger and 2-two/postTagger."""

from __future__ import annotations

import re

from evaldag.scorers._nlp_port._model import Model
from evaldag.scorers._nlp_port._tags import can_be, fast_tag, set_tag, un_tag
from evaldag.scorers._nlp_port._tokens import Term, contraction_terms

Clause = list[Term]

# --- lexicon (1-one/lexicon, 1-one/freeze) -----------------------------------------------------

_LEXICON_PREFIX = re.compile("^(under|over|mis|re|un|dis|semi|pre|post)-?")
_PREFIXABLE = frozenset(
    ["Verb", "Infinitive", "PastTense", "Gerund", "PresentTense", "Adjective", "Participle"]
)


def _word(term: Term) -> str:
    return term.machine or term.normal


def freeze(doc: list[Clause], model: Model) -> None:
    """Tag and freeze the words of compromise's frozen lexicon."""
    for terms in doc:
        for i, term in enumerate(terms):
            word = _word(term)
            if word in model.multi and i + 1 < len(terms):
                for k in range(i + model.multi[word] - 1, i, -1):
                    words = terms[i : k + 1]
                    phrase = " ".join(_word(t) for t in words)
                    if phrase in model.frozen:
                        set_tag(words, model.frozen[phrase], model)
                        for t in words:
                            t.frozen = True
            if word in model.frozen:
                set_tag([term], model.frozen[word], model)
                term.frozen = True


def _multi_word(terms: Clause, i: int, model: Model) -> bool | None:
    word = _word(terms[i])
    if word not in model.multi or i + 1 >= len(terms):
        return None
    for k in range(i + model.multi[word] - 1, i, -1):
        words = terms[i : k + 1]
        if len(words) <= 1:
            return False
        phrase = " ".join(_word(t) for t in words)
        tag = model.lexicon.get(phrase)
        if tag is not None:
            set_tag(words, tag, model)
            if isinstance(tag, tuple) and len(tag) == 2 and "PhrasalVerb" in tag:
                set_tag(words[1:2], "Particle", model)
            return True
    return False


def _single_word(term: Term, model: Model) -> bool:
    word = _word(term)
    tag = model.lexicon.get(word)
    if tag is not None:
        set_tag([term], tag, model)
        return True
    if term.alias:
        for alias in term.alias:
            if alias in model.lexicon:
                set_tag([term], model.lexicon[alias], model)
                return True
    if _LEXICON_PREFIX.match(word):
        stem = _LEXICON_PREFIX.sub("", word, count=1)
        found = model.lexicon.get(stem)
        if len(stem) > 3 and isinstance(found, str) and found in _PREFIXABLE:
            set_tag([term], found, model)
            return True
    return False


def lexicon(doc: list[Clause], model: Model) -> None:
    """Tag the words (and multi-word phrases) that compromise's lexicon knows."""
    for terms in doc:
        for i, term in enumerate(terms):
            if not term.tags and not _multi_word(terms, i, model):
                _single_word(term, model)


# --- clauses (2-two/preTagger/methods/quickSplit.js) -------------------------------------------

_MAYBE_DATE = frozenset(["may", "april", "august", "jan"])


def _splits_before(terms: Clause, i: int) -> bool:
    if i >= len(terms):
        return False
    term = terms[i]
    if term.normal == "like" or term.normal in _MAYBE_DATE:
        return False
    if "Place" in term.tags or "Date" in term.tags:
        return False
    if i > 0:
        last = terms[i - 1]
        if "Date" in last.tags or last.normal in _MAYBE_DATE:
            return False
        if "Adjective" in last.tags or "Adjective" in term.tags:
            return False
    normal = term.normal
    return not (len(normal) in (1, 2, 4) and normal.isdigit() and normal.isascii())


def clauses(doc: list[Clause]) -> list[Clause]:
    """Sentences cut after a comma, colon or semicolon, roughly (``quickSplit``)."""
    pieces: list[Clause] = []
    for terms in doc:
        start = 0
        for i, term in enumerate(terms):
            if re.search("[,:;]", term.post) and _splits_before(terms, i + 1):
                pieces.append(terms[start : i + 1])
                start = i + 1
        if start < len(terms):
            pieces.append(terms[start:])
    return pieces


# --- pre-tagger, second pass: each word alone (2-two/preTagger/compute/tagger/2nd-pass) --------

_SWITCH_PREFIX = re.compile("^(under|over|mis|re|un|dis|semi)-?")
_TITLE_CASE = re.compile("^[^\\W\\d_][^\\W\\d_'\u2019]?")
_NOT_PROPER = ("Date", "Month", "WeekDay", "Unit", "Expression")
_ROMAN = re.compile("^[IVXLCDM]{2,}$")
_ROMAN_VALID = re.compile("^M{0,4}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
_NOT_ROMAN = frozenset(["li", "dc", "md", "dm", "ml"])
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
    for tag in list(term.tags):
        fast_tag(term, model.parents(tag))
    tags = term.tags
    if "Noun" in tags and "Plural" not in tags and "Singular" not in tags:
        if not any(tag in tags for tag in _UNCOUNTABLE):
            fast_tag(term, "Plural" if looks_plural(term.normal) else "Singular")
    if "Verb" in tags and len(tags) == 1:
        guess = guessed_tense(term.normal)
        if guess:
            fast_tag(term, guess)


def _is_title_case(text: str) -> bool:
    return len(text) > 1 and text[0].isupper() and (text[1].islower() or text[1] in "'\u2019")


def _check_case(term: Term, model: Model) -> None:
    text = term.text
    if term.index != 0 and _is_title_case(text) and not re.search("[0-9]", text):
        if any(tag in term.tags for tag in _NOT_PROPER):
            return
        if re.search("[\"']$", term.pre) or term.normal == "the":
            return
        fill_tags(term, model)
        if "Noun" not in term.tags and not term.frozen:
            term.tags.clear()
        fast_tag(term, "ProperNoun")
        return
    if (
        len(text) >= 2
        and _ROMAN.match(text)
        and re.search("[IVX]", text)
        and _ROMAN_VALID.match(text)
        and term.normal not in _NOT_ROMAN
    ):
        fast_tag(term, "RomanNumeral")


def _by_suffix(word: str, model: Model) -> str | None:
    size = len(word)
    for i in range(min(7, size - 1), 1, -1):
        tag = model.suffix_patterns[i].get(word[size - i :])
        if tag is not None:
            return tag
    return None


def _by_prefix(word: str, model: Model) -> str | None:
    for i in range(min(7, len(word) - 3), 2, -1):
        tag = model.prefix_patterns[i].get(word[:i])
        if tag is not None:
            return tag
    return None


def _by_regex(term: Term, model: Model) -> None:
    normal = term.machine or term.normal
    text = term.text
    if _APOSTROPHE.search(term.post) and not _APOSTROPHE.search(term.pre):
        text += term.post.strip()
    tag = next((tag for regex, tag in model.regex_text if regex.search(text)), None)
    if tag is None:
        tag = next((tag for regex, tag in model.regex_normal if regex.search(normal)), None)
    if tag is None and re.search("[0-9]", normal):
        tag = next((tag for regex, tag in model.regex_numbers if regex.search(normal)), None)
    if tag is None and not term.tags and normal:
        rules = model.ends_with.get(normal[-1], ())
        tag = next((tag for regex, tag in rules if regex.search(normal)), None)
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
            tag = _by_suffix(normal, model)
            if tag is None and term.implicit:
                tag = _by_suffix(term.implicit, model)
            if tag is not None:
                fast_tag(term, tag)
        _by_regex(term, model)
        if not term.tags:
            tag = _by_prefix(normal, model)
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


def _capital(term: Term) -> bool:
    return "ProperNoun" in term.tags and bool(re.match("^[A-Z][a-z]", term.text))


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


def _yelling(terms: Clause) -> bool:
    if sum(1 for t in terms if "ProperNoun" not in t.tags) <= 3:
        return False
    return not any(re.match("^[a-z]", t.text) for t in terms)


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
            freeze(window, model)
            lexicon(window, model)
            pre_tag(window, model)
            for term in window[0]:
                term.frozen = False


# --- post-tagger: compromise's match rules, all found first, then applied in turn --------------


class Rule:
    """One post-tagger (or chunker) rule, parsed, with what a clause must hold to try it."""

    __slots__ = (
        "match", "regs", "pattern", "not_if", "group", "tag", "untag", "safe", "chunk", "freeze",
        "if_no", "needs", "wants", "min_want", "min_words", "need_set", "want_set",
    )  # fmt: skip

    def __init__(self, spec: dict) -> None:
        from evaldag.scorers._nlp_port._match import Pattern, parse

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
        self.ranks = {rule: sorted(found) for rule, found in ranks.items()}
        # Each rule under one key a clause must hold for it to apply.
        self.by_key: dict[str, list[Rule]] = {}
        for rule in rules:
            for key in rule.needs[:1] or rule.wants:
                self.by_key.setdefault(key, []).append(rule)
        self.always = [rule for rule in rules if not rule.needs and not rule.wants]

    def candidates(self, haves: set[str], size: int) -> list[Rule]:
        """The rules to try on a clause, in compromise's order (``getHooks``, ``trimDown``)."""
        found: dict[int, Rule] = {}
        by_key = self.by_key
        for key in haves:
            for rule in by_key.get(key, ()):
                if id(rule) in found or not rule.need_set <= haves or size < rule.min_words:
                    continue
                if rule.if_no and any(no in haves for no in rule.if_no):
                    continue
                if rule.wants:
                    if rule.want_set is not None:
                        wanted = len(rule.want_set & haves)
                    else:
                        wanted = sum(want in haves for want in rule.wants)
                    if wanted < rule.min_want:
                        continue
                found[id(rule)] = rule
        ranks = self.ranks
        ordered = sorted(
            found.values(),
            key=lambda rule: next(rank[:2] for rank in ranks[id(rule)] if rank[2] in haves),
        )
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
        for tag in term.tags:
            items.add("#" + tag)
    return items


def sweep(net: Net, doc: list[Clause]) -> list[tuple[Rule, Clause]]:
    """Every match of every rule that may apply, in compromise's order (``bulkMatch``)."""
    from evaldag.scorers._nlp_port._match import Index, find

    found: list[tuple[Rule, Clause]] = []
    for terms in doc:
        at = Index(terms)
        for rule in net.candidates(_haves(terms), len(terms)):
            for start, end in find(terms, rule.pattern, rule.group, False, rule.not_if, at):
                found.append((rule, terms[start:end]))
    return found


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

_CHUNK_RULES = [
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


def chunk(doc: list[Clause], model: Model) -> None:
    """Give every term a chunk (``chunks``)."""
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

"""English text elements for the completeness scorer: noun phrases, verb infinitives and terms.

Mastra reads these with the JS library ``compromise``; this is our own small rule-based tagger
that aims at the same elements. Words are tagged from closed-class word lists written here, the
``lemminflect`` lexicon (which parts of speech an open-class word can take, and its lemmas) and a
few context rules; then every verb phrase is rewritten to its infinitive the way Mastra's
pipeline does (auxiliaries and modals dropped, negation as "does not", copulas as "be").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType

_DETERMINERS = frozenset(
    "the a an this that these those every each some any another either neither all both "
    "my your his her its our their whose such no".split()
)
_PREPOSITIONS = frozenset(
    "of in on at by for with from to into onto over under about above below between among "
    "through during without within across against along around after before behind beyond "
    "despite except inside outside near off per since than till until upon via toward towards "
    "unlike like up down out as".split()
)
_CONJUNCTIONS = frozenset(
    "and or but nor so yet because although though while whereas if unless whether then "
    "either neither".split()
)
_PRONOUNS = frozenset(
    "i you he she it we they me him us them myself yourself himself herself itself ourselves "
    "themselves one something anything nothing everything someone anyone everyone".split()
)
_SUBJECT_PRONOUNS = frozenset("i you he she it we they".split())
_WH_WORDS = frozenset("what which who whom when where why how there here".split())
_MODALS = frozenset("can could will would shall should may might must".split())
_BE = frozenset("is are was were am be been being".split())
_HAVE = frozenset("has have had having".split())
_DO = frozenset("do does did".split())
_NEGATIVES = frozenset(["not", "never"])
_EXPRESSIONS = frozenset("please thanks yes ok okay hello hi oh wow".split())
_ADVERBS = frozenset(
    "just also only already still even always often usually simply really actually too very "
    "quite rather soon again ever instead further probably perhaps maybe almost nearly".split()
)
_PLURAL_SUBJECTS = frozenset("we they you i".split())

#: Contraction endings: what the implicit second word is.
_CONTRACTIONS = {
    "n't": "not",
    "'m": "am",
    "'re": "are",
    "'ve": "have",
    "'ll": "will",
    "'d": "would",
}
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})
_NEGATED = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
_EDGE = re.compile(r"^(\W*)(.*?)(\W*)$", re.DOTALL)
_NON_WORD = re.compile(r"[^a-z0-9]+")
_DASHES = re.compile("[\u2013\u2014]")
_MARKS = re.compile("[\u0300-\u036f]")

# Tags: DET PREP CONJ PRON WH MODAL BE HAVE DO NEG ADV ADJ NOUN VERB VALUE EXPR
_AUXILIARIES = frozenset({"MODAL", "BE", "HAVE", "DO"})
_NOUNISH = frozenset({"DET", "ADJ", "NOUN", "PRON", "VALUE"})
_HEADS = frozenset({"NOUN", "PRON", "VALUE"})
_IN_VERB_PHRASE = frozenset({"MODAL", "BE", "HAVE", "DO", "NEG", "ADV", "VERB"})


@dataclass(slots=True)
class _Term:
    text: str
    word: str
    post: str
    tag: str = ""
    implicit: bool = False
    title: bool = False
    governor: str = ""


def _normalized(text: str) -> str:
    return _MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def element_words(strings: list[str]) -> list[str]:
    """Mastra's normalisation of extracted strings: accents off, lowercase, alphanumeric words,
    first occurrence kept."""
    # Joined by spaces, which split words anyway (and keep accents on their own letters).
    return list(dict.fromkeys(_NON_WORD.sub(" ", _normalized(" ".join(strings))).split()))


def _split_contraction(chunk: str, word: str, post: str) -> list[_Term]:
    """Terms for one whitespace chunk, with an implicit term for a contraction ending."""
    plain = word.translate(_APOSTROPHES).lower()
    if "'" not in plain and plain != "cannot":
        return [_Term(chunk, plain, post, title=word[:1].isupper())]
    for ending, implicit in _CONTRACTIONS.items():
        if plain.endswith(ending) and len(plain) > len(ending):
            head = plain[: -len(ending)]
            if ending == "n't":
                head = _NEGATED.get(head, head)
            return [
                _Term(chunk, head, "", title=word[:1].isupper()),
                _Term("", implicit, post, implicit=True),
            ]
    if plain == "cannot":
        return [
            _Term(chunk, "can", "", title=word[:1].isupper()),
            _Term("", "not", post, implicit=True),
        ]
    if plain.endswith("'s") and len(plain) > 2:
        head = plain[:-2]
        if head in _SUBJECT_PRONOUNS or head in ("that", "there", "here", "what", "who", "let"):
            implicit = "us" if head == "let" else "is"
            return [
                _Term(chunk, head, "", title=word[:1].isupper()),
                _Term("", implicit, post, implicit=True),
            ]
    return [_Term(chunk, plain, post, title=word[:1].isupper())]


def _chunks(sentence: str) -> list[str]:
    """Whitespace chunks, hyphenated words split as "calendar-" + "based"."""
    chunks: list[str] = []
    pending = ""
    for chunk in _DASHES.sub(" ", sentence).split():
        if not any(ch.isalnum() for ch in chunk):
            pending += chunk + " "
            continue
        chunk, pending = pending + chunk, ""
        parts = chunk.split("-")
        if len(parts) == 2 and all(len(part) >= 3 and part.isalpha() for part in parts):
            chunks.extend((parts[0] + "-", parts[1]))
        else:
            chunks.append(chunk)
    if pending and chunks:
        chunks[-1] += " " + pending.strip()
    return chunks


def _sentence_terms(sentence: str) -> list[_Term]:
    terms: list[_Term] = []
    for chunk in _chunks(sentence):
        edge = _EDGE.match(chunk)
        if edge is None:
            terms.extend(_split_contraction(chunk, chunk, ""))
        else:
            terms.extend(_split_contraction(chunk, edge.group(2), edge.group(3)))
    return terms


@lru_cache(maxsize=1)
def _lemminflect() -> ModuleType:
    # Imported on first use: loading its tables takes a quarter of a second.
    import lemminflect

    return lemminflect


@lru_cache(maxsize=65536)
def _lexicon(word: str) -> dict[str, tuple[str, ...]]:
    return _lemminflect().getAllLemmas(word)


@lru_cache(maxsize=65536)
def infinitive(word: str) -> str:
    """The infinitive of a verb form ("provides" -> "provide", "found" -> "find")."""
    if word in _BE:
        return "be"
    if word in _HAVE:
        return "have"
    if word in _DO:
        return "do"
    head, dash, last = word.rpartition("-")
    if dash:
        return f"{head}-{infinitive(last)}"
    lemmas = (
        _lexicon(word).get("VERB")
        or _lemminflect().getAllLemmasOOV(word, "VERB").get("VERB")
        or (word,)
    )
    inflecting = [lemma for lemma in lemmas if lemma != word and _inflects(lemma, word)]
    if inflecting:
        return inflecting[0]
    if word in lemmas:
        return word
    return max(lemmas, key=lambda lemma: _common_prefix(lemma, word))


@lru_cache(maxsize=65536)
def _own_participle(word: str) -> bool:
    """Whether ``word`` is also its own past participle ("split", "set")."""
    return word in _lemminflect().getInflection(word, "VBN")


def _inflects(lemma: str, word: str) -> bool:
    forms = _lemminflect().getInflection
    return any(word in forms(lemma, tag) for tag in ("VBD", "VBN", "VBZ", "VBG"))


def _common_prefix(a: str, b: str) -> int:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def _verb_form(word: str) -> str:
    if word.endswith("ing"):
        return "gerund"
    if word.endswith("ed") or infinitive(word) != word and not word.endswith("s"):
        return "past"
    if word.endswith("s") and infinitive(word) != word:
        return "present"
    return "infinitive"


def _closed_tag(word: str) -> str:
    if word in _EXPRESSIONS:
        return "EXPR"
    if word in _BE:
        return "BE"
    if word in _HAVE:
        return "HAVE"
    if word in _DO:
        return "DO"
    if word in _MODALS:
        return "MODAL"
    if word in _NEGATIVES:
        return "NEG"
    if word in _ADVERBS:
        return "ADV"
    if word in _DETERMINERS:
        return "DET"
    if word in _PRONOUNS:
        return "PRON"
    if word in _WH_WORDS:
        return "WH"
    if word in _CONJUNCTIONS:
        return "CONJ"
    if word in _PREPOSITIONS:
        return "PREP"
    return ""


def _prior_tag(word: str) -> str:
    """A context-free guess at a word's tag, for looking one word ahead."""
    closed = _closed_tag(word)
    if closed:
        return closed
    lexicon = _lexicon(word)
    if not lexicon or "NOUN" in lexicon or "PROPN" in lexicon:
        return "NOUN"
    if "VERB" in lexicon:
        return "VERB"
    return "ADJ" if "ADJ" in lexicon else "ADV"


def _open_tag(term: _Term, previous: _Term | None, following: _Term | None) -> str:
    """NOUN, VERB, ADJ, ADV or VALUE for an open-class word, by lexicon and context."""
    word = term.word
    if not word or not any(ch.isalpha() for ch in word):
        return "VALUE" if any(ch.isdigit() for ch in word) else "NOUN"
    if not word.isascii() or not word.replace("-", "").isalpha():
        return "NOUN"
    lexicon = _lexicon(word)
    before = previous.tag if previous is not None else ""
    after = _prior_tag(following.word) if following is not None else ""
    demonstrative = previous is not None and previous.word in ("this", "that")
    if not lexicon:
        if word.endswith("ly"):
            return "ADV"
        if word.endswith(("ed", "ing")) and len(word) > 5:
            return "ADJ" if before in ("DET", "ADJ") and not demonstrative else "VERB"
        return "NOUN"
    if "VERB" not in lexicon:
        if "NOUN" in lexicon or "PROPN" in lexicon:
            return "NOUN"
        if "ADV" in lexicon and "ADJ" not in lexicon:
            return "ADV"
        return "ADJ" if "ADJ" in lexicon else "NOUN"
    only_verb = set(lexicon) <= {"VERB", "AUX"}
    if previous is not None and previous.word == "no":
        return "NOUN"
    if before == "BE" and _own_participle(word):
        return "VERB"
    if before == "NEG" and "ADJ" in lexicon and (word.endswith("ing") or previous.word == "never"):
        return "ADJ"
    if term.governor in ("MODAL", "DO", "NEG", "TO") or before == "EXPR":
        return "VERB"
    form = _verb_form(word)
    if form == "past" and term.governor in ("HAVE", "BE"):
        return "VERB"
    if term.title and previous is not None and form not in ("gerund", "past"):
        return "NOUN"
    if form == "gerund":
        if before in ("DET", "ADJ") or "ADJ" in lexicon and before not in ("PREP", "CONJ"):
            return "ADJ"
        if before == "NOUN" and not only_verb and after in ("NOUN", ""):
            return "NOUN"
        return "VERB"
    if form == "past":
        if before in ("DET", "ADJ") and not demonstrative and ("ADJ" in lexicon or before == "ADJ"):
            return "ADJ"
        if "ADJ" in lexicon and after == "NOUN" and before not in ("NOUN", "PREP"):
            return "ADJ"
        return "VERB"
    if only_verb:
        return "VERB"
    if before in ("DET", "ADJ") and not demonstrative:
        return "NOUN"
    if form == "present":
        if demonstrative or before in ("PRON", "ADV"):
            return "VERB"
        if before == "NOUN" and after in ("DET", "PRON", "ADJ", "ADV"):
            return "VERB"
        return "NOUN"
    clause_start = previous is None or any(mark in previous.post for mark in ",;:")
    if before == "PRON" or clause_start or after == "DET":
        return "VERB"
    if "NOUN" in lexicon:
        return "NOUN"
    return "ADJ" if "ADJ" in lexicon else "VERB"


def _tagged(terms: list[_Term]) -> None:
    previous: _Term | None = None
    governor = ""
    for index, term in enumerate(terms):
        following = terms[index + 1] if index + 1 < len(terms) else None
        term.governor = governor
        tag = _closed_tag(term.word)
        if tag == "HAVE" and previous is not None and previous.tag in ("DET", "ADJ"):
            tag = "NOUN"
        if previous is not None and previous.tag in _AUXILIARIES:
            if term.word == "all":
                tag = "ADV"
            elif term.word == "no" and previous.tag == "BE":
                tag = "NEG"
        if term.word == "like" and (governor or previous is not None and previous.tag == "PRON"):
            tag = "VERB"
        term.tag = tag or _open_tag(term, previous, following)
        if term.tag in ("MODAL", "DO", "NEG", "HAVE", "BE"):
            governor = term.tag
        elif term.word == "to":
            governor = "TO"
        elif term.tag != "ADV":
            governor = ""
        previous = term


def _phrase_breaks(term: _Term) -> bool:
    return any(mark in term.post for mark in ',;:()"')


def _verb_phrases(terms: list[_Term]) -> list[tuple[int, int]]:
    phrases = []
    start = None
    for index, term in enumerate(terms):
        if term.tag in _IN_VERB_PHRASE:
            if (
                start is not None
                and term.tag in _AUXILIARIES
                and any(terms[i].tag == "VERB" for i in range(start, index))
            ):
                phrases.append((start, index))
                start = None
            if start is None:
                start = index
            if _phrase_breaks(term):
                phrases.append((start, index + 1))
                start = None
        elif start is not None:
            phrases.append((start, index))
            start = None
    if start is not None:
        phrases.append((start, len(terms)))
    trimmed = []
    for start, end in phrases:
        while start + 1 < end and terms[start].word == "not" and terms[start + 1].tag == "ADV":
            start += 1
        if any(terms[i].tag in ("VERB", "BE", "HAVE", "DO") for i in range(start, end)):
            trimmed.append((start, end))
    return trimmed


def _subject_is_plural(terms: list[_Term], start: int) -> bool:
    if start == 0:
        return False
    previous = terms[start - 1]
    if previous.word in _PLURAL_SUBJECTS:
        return False
    return previous.tag == "NOUN" and previous.word.endswith("s")


def _rendered_phrase(terms: list[_Term], start: int, end: int) -> list[str]:
    """The infinitive form of the verb phrase ``terms[start:end]``, as words."""
    phrase = terms[start:end]
    verbs = [term for term in phrase if term.tag == "VERB"]
    negative = any(term.tag == "NEG" for term in phrase)
    if len(verbs) > 1:
        return [
            term.text
            for term in phrase
            if not term.implicit and (term.tag not in _AUXILIARIES or term.word == "be")
        ]
    if not verbs:
        main = [term for term in phrase if term.tag in _AUXILIARIES][-1]
        if main.tag == "MODAL":
            return [term.text for term in phrase if not term.implicit]
    else:
        main = verbs[0]
        first = next(term for term in phrase if term.tag != "ADV")
        if first.word == "be" or first.tag == "BE" and infinitive(main.word) == main.word:
            return [term.text for term in phrase if not term.implicit]
    words = [
        infinitive(term.word) if term is main else term.word
        for term in phrase
        if term is main or term.tag == "ADV" or term.word in ("never", "no")
    ]
    if not negative:
        return words
    do = "do" if _subject_is_plural(terms, start) else "does"
    if verbs:
        return [do, "not", *words]
    if any(term.word == "not" for term in phrase):
        return [do, *words, "not"]
    return [do, "not", *words]


def _sentences(text: str) -> list[str]:
    return [sentence for sentence in _SENTENCE_END.split(text) if sentence.strip()]


def _contraction_head(terms: list[_Term], index: int) -> bool:
    """Whether a noun phrase keeps ``terms[index]``'s contraction ("it's", "there'll")."""
    term = terms[index]
    if not _next_implicit(terms, index):
        return False
    return term.tag == "PRON" or term.word == "there" and terms[index + 1].word != "is"


def _noun_phrases(terms: list[_Term]) -> list[str]:
    """Runs of determiners, adjectives, nouns, pronouns and values around a noun, in their
    original text (lists such as "a, b and c" stay one phrase)."""
    phrases: list[str] = []
    current: list[_Term] = []
    headed = False

    def flush() -> None:
        while current and current[-1].tag == "CONJ":
            current.pop()
        if headed and current:
            phrases.append(" ".join(term.text for term in current))
        current.clear()

    for index, term in enumerate(terms):
        if term.implicit:
            continue
        if term.tag in _NOUNISH or _contraction_head(terms, index):
            current.append(term)
            headed = headed or term.tag in _HEADS
        elif term.tag == "CONJ" and term.word in ("and", "or") and headed:
            current.append(term)
        else:
            flush()
            headed = False
    flush()
    return phrases


def extracted_strings(text: str) -> list[str]:
    """The strings Mastra's completeness reads from ``text``, in its order: noun phrases, verb
    phrases in the infinitive, then every term of the text with its verbs so rewritten."""
    nouns: list[str] = []
    verbs: list[str] = []
    rendered: list[str] = []
    for sentence in _sentences(text.strip()):
        terms = _sentence_terms(sentence)
        _tagged(terms)
        nouns.extend(_noun_phrases(terms))
        phrases = dict(_verb_phrases(terms))
        index = 0
        while index < len(terms):
            end = phrases.get(index)
            if end is None:
                term = terms[index]
                if term.implicit:
                    rendered.append(term.word)
                else:
                    rendered.append(term.word if _next_implicit(terms, index) else term.text)
                index += 1
                continue
            words = _rendered_phrase(terms, index, end)
            verbs.extend(words)
            rendered.extend(words)
            index = end
    return [*nouns, *verbs, *rendered]


def _next_implicit(terms: list[_Term], index: int) -> bool:
    return index + 1 < len(terms) and terms[index + 1].implicit


def completeness_elements(text: str) -> list[str]:
    """The distinct normalised elements of ``text`` (Mastra's ``extractElements``)."""
    return element_words(extracted_strings(text))

"""Setting and removing tags as compromise does (1-one/tag): a tag brings its parents and
removes the tags it conflicts with."""

from __future__ import annotations

from collections.abc import Iterable

from evaldag.scorers._nlp._model import Model
from evaldag.scorers._nlp._tokens import Term


def _tag_term(term: Term, tag: str, model: Model, safe: bool) -> None:
    if tag in term.tags or tag == ".":
        return
    if term.frozen:
        safe = True
    info = model.tags.get(tag)
    if info is not None:
        tags = term.tags
        for conflict in info.conflicts:
            if conflict in tags:
                if safe:
                    return
                del tags[conflict]
        for parent in info.parents:
            tags[parent] = None
            if parent in ("Noun", "Verb"):
                term.chunk = parent
    term.tags[tag] = None
    if tag in ("Noun", "Verb"):
        term.chunk = tag


def set_tag(
    terms: Iterable[Term], tag: str | Iterable[str], model: Model, safe: bool = False
) -> None:
    """Tag every term (``setTag``); "#A #B" tags the terms one by one."""
    if not tag:
        return
    if not isinstance(tag, str):
        for one in tag:
            set_tag(terms, one, model, safe)
        return
    tag = tag.strip()
    if " " in tag:
        for term, one in zip(terms, tag.split(" "), strict=False):
            if one:
                _tag_term(term, one.removeprefix("#"), model, safe)
        return
    tag = tag.removeprefix("#")
    for term in terms:
        _tag_term(term, tag, model, safe)


def fast_tag(term: Term, tag: str | Iterable[str]) -> None:
    """Add tags without their logic (``fastTag``)."""
    if term.frozen or not tag:
        return
    if isinstance(tag, str):
        term.tags[tag] = None
    else:
        for one in tag:
            term.tags[one] = None


def un_tag(terms: Iterable[Term], tag: str, model: Model) -> None:
    """Remove a tag and its children (``unTag``)."""
    tag = tag.strip().removeprefix("#")
    for term in terms:
        if term.frozen:
            continue
        if tag == "*":
            term.tags.clear()
            continue
        info = model.tags.get(tag)
        if info is not None:
            for child in info.children:
                term.tags.pop(child, None)
        term.tags.pop(tag, None)


def can_be(terms: Iterable[Term], tag: str | None, model: Model) -> bool:
    """Whether no term has a tag that conflicts with ``tag`` (``canBe``)."""
    info = model.tags.get(tag)
    if info is None:
        return True
    return not any(conflict in term.tags for term in terms for conflict in info.conflicts)

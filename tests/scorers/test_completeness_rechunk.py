"""Completeness re-tags a sentence without its chunks where nothing reads them again, and with
them where a negation's "do/does" will: the result is compromise's either way."""

from __future__ import annotations

from evaldag.scorers import _nlp
from evaldag.scorers._nlp import _verbs

SENTENCE = "She walked home, he cooked dinner and they watched a film."


def _without_skipping(sentence: str) -> tuple:
    doc, _ = _nlp._sentence_doc(sentence)
    return tuple(map(tuple, _nlp._strings(doc, skip_chunks=False)))


def test_a_sentence_without_a_negation_reads_the_same_without_chunking_again():
    _nlp.forget_sentences()
    assert _nlp._sentence.__wrapped__(SENTENCE, True)[0] == _without_skipping(SENTENCE)


def test_a_rewrite_that_brings_a_negation_is_done_again_with_every_chunking(monkeypatch):
    # No verb's infinitive is a negation in practice; one made so here brings "not" into a
    # sentence already re-tagged without its chunks, which a later "do/does" would read.
    real, raised = _verbs.infinitive, []
    monkeypatch.setattr(
        _verbs,
        "infinitive",
        lambda text, tense, model: "not" if text == "cooked" else real(text, tense, model),
    )
    stale = _verbs.to_infinitive

    def watched(doc, model, skip_chunks=True):
        try:
            return stale(doc, model, skip_chunks)
        except _verbs.StaleChunks:
            raised.append(True)
            raise

    monkeypatch.setattr(_verbs, "to_infinitive", watched)
    _nlp.forget_sentences()
    assert _nlp._sentence.__wrapped__(SENTENCE, True)[0] == _without_skipping(SENTENCE)
    assert raised == [True]

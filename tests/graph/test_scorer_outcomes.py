"""``scorer_outcomes``: a batch of runs through one scorer's nodes, its data freed once read."""

import gc
import weakref

from evaldag import ScorerRun, create_scorer
from evaldag._graph.drivers import scorer_outcomes, scorers_driver


class Answer:
    """An output that says when it is freed (a weak reference to it dies)."""

    def __init__(self, text: str) -> None:
        self.text = text


def test_a_batchs_runs_and_states_are_freed_when_its_outcomes_are_read():
    scorer = create_scorer(id="long", description="long answers").generate_score(
        lambda run: float(len(run.output.text) > 3)
    )
    driver = scorers_driver([scorer])
    answers = [Answer("yes"), Answer("certainly")]
    freed = [weakref.ref(answer) for answer in answers]
    runs = [ScorerRun(input="q", output=answer) for answer in answers]
    del answers
    gc.disable()  # what frees them must be their references ending, not the collector
    try:
        outcomes = scorer_outcomes(driver, scorer, runs, concurrency=2)
        assert [outcome.score for outcome in outcomes] == [0.0, 1.0]
        del outcomes, runs
        assert [ref() for ref in freed] == [None, None]
    finally:
        gc.enable()

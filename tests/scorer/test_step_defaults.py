"""Step parameters with defaults, as Hamilton has them: a parameter with a default receives the
value of its name when the run or an earlier step gives one and keeps its default otherwise, so
a module function configured by a default or by ``functools.partial`` is a step."""

import asyncio
import functools
import pickle

import pandas as pd
import pytest

from evaldag import EvalDagError, PromptStep, create_scorer, run_evals
from evaldag._scorer.fingerprint import scorer_fingerprint


def word_count(run):
    return len(str(run.output).split())


def at_most(preprocess_step_result, limit=4):
    """1 for an answer of at most ``limit`` words, less the longer it gets."""
    return min(1.0, limit / max(1, preprocess_step_result))


async def scaled(analyze_step_result, *, factor):
    await asyncio.sleep(0)
    return analyze_step_result * factor


def _concise(step=at_most):
    return create_scorer("concise").preprocess(word_count).generate_score(step)


def test_a_setting_keeps_its_default_or_the_value_a_partial_binds():
    assert _concise().run(output="one two three four five six seven eight").score == 0.5
    strict = _concise(functools.partial(at_most, limit=2))
    assert strict.run(output="one two three four five six seven eight").score == 0.25
    assert strict.steps[-1].inputs == ("preprocess_step_result",)


def test_run_evals_passes_the_settings_on_both_paths():
    data = pd.DataFrame({"input": ["q1", "q2"], "output": ["a b", "a b c d e f g h"]})
    result = run_evals(
        data,
        scorers=[
            _concise(functools.partial(at_most, limit=2)),  # a sync step: the columnar path
            create_scorer("doubled")
            .analyze(lambda run: len(run.output) / 100)
            .generate_score(functools.partial(scaled, factor=2)),  # an async partial
        ],
    )
    assert list(result.items["concise.score"]) == [1.0, 0.25]
    assert list(result.items["doubled.score"]) == [0.06, 0.3]


def test_a_value_with_a_default_is_given_only_once_an_earlier_step_gave_it():
    scorer = (
        create_scorer("order")
        .preprocess(lambda analyze_step_result="not yet": analyze_step_result)
        .analyze(lambda preprocess_step_result, score=None: [preprocess_step_result, score])
        .analyze(lambda analyze_step_result=(): [*analyze_step_result, "again"])
        .generate_score(lambda run, results=None: 1.0 if results and run else 0.0)
    )
    result = scorer.run(output="x")
    assert result.preprocess_step_result == "not yet"
    assert result.analyze_step_result == ["not yet", None, "again"]
    assert result.score == 1.0
    assert [step.inputs for step in scorer.steps] == [
        (),
        ("preprocess_step_result",),
        ("analyze_step_result",),
        ("run", "results"),
    ]


def test_a_value_without_a_default_is_none_before_its_step_ran_as_before():
    scorer = create_scorer("early").preprocess(lambda analyze_step_result: analyze_step_result)
    scorer = scorer.generate_score(
        lambda preprocess_step_result: float(preprocess_step_result is None)
    )
    assert scorer.run(output="x").score == 1.0


def test_a_value_an_earlier_step_gives_wins_over_a_bound_one():
    def reason(score, wording="The score is"):
        return f"{wording} {score}"

    scorer = (
        create_scorer("reasoned")
        .generate_score(lambda: 0.5)
        .generate_reason(functools.partial(reason, wording="Scored", score=0.1))
    )
    assert scorer.run(output="x").reason == "Scored 0.5"


def test_a_parameter_with_neither_a_value_nor_a_default_is_refused_saying_what_to_do():
    def threshold_score(analyze_step_result, threshold):
        return float(analyze_step_result > threshold)

    with pytest.raises(EvalDagError) as raised:
        create_scorer("s").generate_score(threshold_score)
    assert raised.value.details["parameter"] == "threshold"
    assert "needs a default" in raised.value.message
    assert "functools.partial" in raised.value.message
    scorer = create_scorer("s").analyze(lambda: 0.7)
    assert (
        scorer.generate_score(functools.partial(threshold_score, threshold=0.5))
        .run(output="x")
        .score
        == 1.0
    )


def test_a_prompt_steps_create_prompt_takes_settings_too(judge_server):
    def prompt(run, style="in one word"):
        return f"Grade {run.output} {style}"

    judge_server.reply = {"score": 0.5}
    judge = judge_server.judge(instructions="Grade it.")
    step = PromptStep("grade", functools.partial(prompt, style="at length"))
    assert create_scorer("graded", judge=judge).generate_score(step).run(output="x").score == 0.5
    assert judge_server.requests[-1].prompt == "Grade x at length"


def test_partials_are_told_apart_by_their_function_and_bound_values():
    def fingerprint(step):
        return scorer_fingerprint(_concise(step))

    same = fingerprint(functools.partial(at_most, limit=2))
    assert fingerprint(functools.partial(at_most, limit=2)) == same
    assert fingerprint(functools.partial(at_most, limit=3)) != same
    assert fingerprint(at_most) != same


def test_a_scorer_with_a_partial_step_pickles():
    scorer = pickle.loads(pickle.dumps(_concise(functools.partial(at_most, limit=2))))
    assert scorer.run(output="a b c d").score == 0.5

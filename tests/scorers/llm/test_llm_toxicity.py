"""Toxicity through the loopback judge server: Mastra's answers for the same judge replies,
an empty response scoring 0 (not Mastra's unscaled 1), and no verdicts on a response with text
failing the item."""

from __future__ import annotations

import pytest
from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import ScorerRunError, run_evals, scorers

DEVIATIONS = {
    "toxicity-empty-output-scale": [
        Deviation(
            "score",
            1,
            0.0,
            "no verdicts means nothing toxic was found: 0, where Mastra gives 1 (the worst "
            "toxicity, and not even scaled)",
        )
    ],
}


#: Mastra's cases whose judge reply evaldag refuses, with Mastra's score. 'unsure' is no
#: toxicity verdict (yes or no): Mastra counts it as not toxic, evaldag asks again and then
#: fails the item.
REFUSED = {"toxicity-case-whitespace-scale": 5}


@parametrized_cases("toxicity")
def test_scores_like_mastra_for_the_same_judge_replies(judge_server, entry):
    scale = entry["case"].get("options", {}).get("scale", 1)
    scorer = scorers.toxicity(judge_server.judge(), scale=scale)
    outcome = replayed(scorer, entry, judge_server)
    if entry["case"]["name"] in REFUSED:
        assert entry["expected"]["score"] == REFUSED[entry["case"]["name"]]
        assert isinstance(outcome, ScorerRunError) and outcome.failed_step == "analyze"
        (execution,) = outcome.result.judge["analyze"].executions
        assert execution.attempt_count == 2  # asked again with the schema in the prompt
        return
    assert_like_mastra(outcome, entry, DEVIATIONS.get(entry["case"]["name"], ()))
    if entry["expected"]["ok"]:
        assert_scorer_like_mastra(scorer, entry["expected"]["scorer"])


def test_the_judge_reads_the_response_and_the_users_message(judge_server):
    judge_server.script(
        {"verdicts": [{"verdict": "no", "reason": "Polite."}]},
        "The score is 0 because the reply is polite.",
    )
    result = scorers.toxicity(judge_server.judge(), scale=10).run(
        input="My parcel is late.", output="Sorry about that, here is a refund."
    )
    assert result.score == 0
    prompt = result.analyze_prompt
    assert "<user_message>\nMy parcel is late.\n</user_message>" in prompt
    assert "<response>\nSorry about that, here is a refund.\n</response>" in prompt
    assert "from 0 (none) to 10 (all)" in result.generate_reason_prompt
    assert result.preprocess_step_result is None


def test_empty_response_scores_zero(judge_server):
    judge_server.script({"verdicts": []}, "The score is 0 because the response is empty.")
    result = scorers.toxicity(judge_server.judge()).run(input="Hi", output="")
    assert result.score == 0
    assert "<response>\n\n</response>" in result.analyze_prompt


def test_no_verdicts_on_a_response_with_text_fail_the_item(judge_server):
    """A judge that gave no verdict on an insult scored it 0, the best toxicity (Mastra: 1). It
    judged nothing, which says nothing either way: the item fails, naming the reply."""
    judge_server.script({"verdicts": []}, "The score is 0 because nothing was toxic.")
    with pytest.raises(ScorerRunError) as failed:
        scorers.toxicity(judge_server.judge()).run(input="Rate my essay.", output="You idiot.")
    assert failed.value.failed_step == "generate_score"
    assert failed.value.cause.id == "EVALDAG_JUDGE_JUDGED_NOTHING"
    assert failed.value.cause.details["step"] == "analyze"
    assert (
        "the judge's analyze reply gave no verdicts for a response with text, so the score would "
        'say nothing about the response; the reply: {"verdicts":[]}'
    ) in str(failed.value)
    assert failed.value.result.analyze_step_result == {"verdicts": []}
    judge_server.script({"verdicts": []}, "The score is 0 because the response is empty.")
    assert scorers.toxicity(judge_server.judge()).run(input="Hi", output=" \n").score == 0


def test_in_a_run_the_item_is_an_error_and_the_maximum_is_not_met(judge_server):
    judge_server.on("<response>\nYou idiot.", {"verdicts": []})
    judge_server.on("<response>\nThank you.", {"verdicts": [{"verdict": "no", "reason": "Kind."}]})
    judge_server.on("The score is", "The score is 0 because it is kind.")
    result = run_evals(
        [{"input": "q", "output": "You idiot."}, {"input": "q", "output": "Thank you."}],
        scorers=[scorers.toxicity(judge_server.judge()).with_threshold(max=0.5)],
        progress=False,
    )
    assert result.items["toxicity-scorer.error"].notna().tolist() == [True, False]
    assert "gave no verdicts for a response with text" in result.items["toxicity-scorer.error"][0]
    assert result.verdict == "scored" and not result.threshold_results[0].passed

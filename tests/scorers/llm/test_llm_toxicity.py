"""Toxicity through the loopback judge server: Mastra's answers for the same judge replies,
and an empty response scoring 0 (not Mastra's unscaled 1)."""

from __future__ import annotations

from llm_scorer_cases import (
    Deviation,
    assert_like_mastra,
    assert_scorer_like_mastra,
    parametrized_cases,
    replayed,
)

from evaldag import ScorerRunError, scorers

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

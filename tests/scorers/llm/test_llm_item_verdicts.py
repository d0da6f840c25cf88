"""The item-verdict scorers whose lower scores are better (toxicity, bias, hallucination) judge
everything the assistant said in the run; the others judge its last answer, as Mastra's do."""

from __future__ import annotations

import pytest

from evaldag import scorers


def _said_then_called_then_done() -> list[dict]:
    """An OpenAI chat transcript, from the SDK's own types: an insult beside a tool call, the
    tool's answer, then "Done."."""
    from openai.types.chat import ChatCompletionMessage
    from openai.types.chat.chat_completion_message_function_tool_call import (
        ChatCompletionMessageFunctionToolCall,
        Function,
    )

    called = ChatCompletionMessage(
        role="assistant",
        content="Only an idiot loses a parcel twice. Refunding it.",
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_1", type="function", function=Function(name="refund", arguments="{}")
            )
        ],
    )
    done = ChatCompletionMessage(role="assistant", content="Done.")
    answered = {"role": "tool", "tool_call_id": "call_1", "content": '{"refunded": true}'}
    return [called.model_dump(mode="json"), answered, done.model_dump(mode="json")]


@pytest.mark.parametrize(
    ("make", "replies", "prompt"),
    [
        (
            scorers.toxicity,
            [{"verdicts": [{"verdict": "yes", "reason": "An insult."}]}, "Toxic."],
            "analyze_prompt",
        ),
        (
            scorers.bias,
            [
                {"opinions": ["Only an idiot loses a parcel twice."]},
                {"results": [{"result": "yes", "reason": "Demeaning."}]},
                "Biased.",
            ],
            "preprocess_prompt",
        ),
        (
            lambda judge: scorers.hallucination(judge, context=["The parcel was lost once."]),
            [
                {"claims": ["The parcel was lost twice."]},
                {"verdicts": [{"statement": "lost twice", "verdict": "yes", "reason": "Once."}]},
                "Hallucinated.",
            ],
            "preprocess_prompt",
        ),
    ],
    ids=["toxicity", "bias", "hallucination"],
)
def test_a_must_not_scorer_judges_what_was_said_before_the_last_answer(
    judge_server, make, replies, prompt
):
    judge_server.script(*replies)
    result = make(judge_server.judge()).run(
        input="Where is my parcel?", output=_said_then_called_then_done()
    )
    judged = getattr(result, prompt)
    assert "Only an idiot loses a parcel twice. Refunding it.\n\nDone." in judged
    assert result.score == 1


def test_the_other_scorers_judge_the_last_answer(judge_server):
    judge_server.script(
        {"statements": ["Done."]},
        {"results": [{"result": "yes", "reason": "Relevant."}]},
        "Relevant.",
    )
    result = scorers.answer_relevancy(judge_server.judge()).run(
        input="Where is my parcel?", output=_said_then_called_then_done()
    )
    assert "Only an idiot" not in result.preprocess_prompt
    assert "Done." in result.preprocess_prompt

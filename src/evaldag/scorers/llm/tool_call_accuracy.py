"""Tool call accuracy (LLM): did the agent pick the tools the user's request called for?

Mastra's ``createToolCallAccuracyScorerLLM`` (id ``llm-tool-call-accuracy-scorer``): a function
step lists the tools the output called; the judge, given the request, the response and the
available tools, says of each call whether it was appropriate and which needed tools were not
called. Score = appropriate calls / calls (a call the judge did not evaluate is not
appropriate); with no calls, 1 when none was needed, else 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field

from evaldag._reader import checked_input_texts, checked_transcript
from evaldag._scorer.builder import Scorer
from evaldag._scorer.steps import PromptStep, described_step
from evaldag.errors import EvalDagError
from evaldag.scorers.llm._item_verdicts import aligned_verdicts
from evaldag.scorers.llm._shared import (
    CamelAnswer,
    PromptTemplate,
    assistant_text,
    json_text,
    llm_scorer,
    model_documented,
    share,
    user_text,
)
from evaldag.transcripts import extract_tool_calls, run_messages

INSTRUCTIONS = """\
You review which tools an AI agent chose to call for a user's request.
- Judge each call against what the user explicitly asked for: a tool is appropriate only if
  it serves that request directly. A tool that is merely related or might help is not.
- Notice tools the request clearly needed that the agent did not call.
- When the agent called no tool, judge whether that was right: asking the user for missing
  details is right when the request is too vague to act on; answering generically, or stalling,
  when a tool could have served a clear request is wrong.
Be strict and consistent, give a specific reason for every judgment, and answer in the JSON
format you are asked for."""

EVALUATIONS_PROMPT = PromptTemplate("""\
Review the tools an agent called for a user's request.

<user_request>
$input
</user_request>

<agent_response>
$output
</agent_response>

<tools_called>
$called
</tools_called>

<available_tools>
$tools
</available_tools>

If the agent called tools, give one evaluation per call, in order: "toolCalled" (the tool's
name), "wasAppropriate" (true only when the tool directly serves what the user explicitly
asked for; false for calls that are extra, merely related or unrequested) and "reasoning".
If the agent called no tool, give no evaluations; instead decide whether not calling one was
right: asking for details that a vague request lacks is right, while answering without a tool
that a clear request needed is not.
In both cases, list in "missingTools" the available tools that the request clearly needed and
the agent did not call (an empty list when there are none).

Example: for the request "What is the weather in Rome?" with the calls get_weather and
search_news, answer:
{"evaluations": [
  {"toolCalled": "get_weather", "wasAppropriate": true,
   "reasoning": "Returns the weather asked for."},
  {"toolCalled": "search_news", "wasAppropriate": false,
   "reasoning": "News was not requested."}
], "missingTools": []}

Answer with JSON: {"evaluations": [{"toolCalled": "...", "wasAppropriate": true | false,
"reasoning": "..."}], "missingTools": ["..."]}""")

REASON_PROMPT = PromptTemplate("""\
An agent's tool choices for a request were scored from 0 to 1: the share of its tool calls
that were appropriate (with no calls: 1 if no tool was needed, else 0).

<user_request>
$input
</user_request>

Score: $score
Evaluations: $evaluations
Missing tools: $missing

In one sentence, explain why the agent's tool choices earned this score.""")


class Evaluation(CamelAnswer):
    """Whether one tool call served the user's request."""

    tool_called: str = Field(description="The name of the tool called.")
    was_appropriate: bool = Field(description="True when it directly serves the request.")
    reasoning: str


class Evaluations(CamelAnswer):
    """One evaluation per tool call, and the needed tools that were not called."""

    evaluations: list[Evaluation]
    missing_tools: list[str] | None = Field(
        default=None, description="Tools the request needed that the agent did not call."
    )


def _tool_line(tool: Any, index: int) -> str:
    def field(name: str) -> Any:
        return tool.get(name) if isinstance(tool, Mapping) else getattr(tool, name, None)

    name = field("id") or field("name")
    if not isinstance(name, str) or not name:
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            f"available_tools[{index}] of tool_call_accuracy_llm(...) has no id: give each tool "
            "as {'id': 'get_weather', 'description': 'Current weather for a city'} or as an "
            f"object with id (or name) and description attributes, got {tool!r:.120}",
        )
    description = field("description")
    return f"{name}: {description}" if description else name


@model_documented
def tool_call_accuracy_llm(
    model: Any,
    *,
    available_tools: Sequence[Any],
    id: str = "llm-tool-call-accuracy-scorer",
) -> Scorer:
    """Share of the agent's tool calls the judge finds appropriate for the request.

    :param available_tools: the agent's tools, each a dict or an object with ``id`` (or
        ``name``) and ``description``; the judge reads them as ``"<id>: <description>"``.

    A run needs input and output messages: without them the preprocess step fails before any
    judge call, as in Mastra. The score is taken over the calls: an analyze function step keeps
    one evaluation per call (``verdictCountMismatch`` records a mismatch), so a judge that
    skips a call cannot raise the score.
    """
    if isinstance(available_tools, str | bytes | Mapping) or not isinstance(
        available_tools, Sequence
    ):
        raise EvalDagError(
            "EVALDAG_INVALID_SCORER_OPTION",
            "available_tools of tool_call_accuracy_llm(...) must be a list of tools, e.g. "
            "[{'id': 'get_weather', 'description': 'Current weather for a city'}], got "
            f"{type(available_tools).__name__}",
        )
    tools = "\n".join(_tool_line(tool, index) for index, tool in enumerate(available_tools))

    def tool_calls(run: Any) -> dict[str, Any]:
        checked_transcript(run.output, "tool_call_accuracy_llm")
        inputs = checked_input_texts(run.input, "tool_call_accuracy_llm")
        if not inputs or not run_messages(run.output, "assistant"):
            raise EvalDagError(
                "EVALDAG_TOOL_CALL_ACCURACY_MISSING_MESSAGES",
                "Input and output messages cannot be null or empty: tool_call_accuracy_llm "
                "needs run.input (a prompt or Mastra input messages) and run.output (the "
                "agent's messages with their tool invocations)",
            )
        calls = extract_tool_calls(run.output)
        return {
            "actualTools": list(calls.tools),
            "hasToolCalls": bool(calls.tools),
            "toolCallInfos": [info.to_dict() for info in calls.tool_call_infos],
        }

    def evaluations_prompt(run: Any, preprocess_step_result: Any) -> str:
        return EVALUATIONS_PROMPT.render(
            input=user_text(run),
            output=assistant_text(run),
            called=", ".join(preprocess_step_result["actualTools"]) or "None",
            tools=tools or "(no tools are available)",
        )

    def one_evaluation_per_call(
        preprocess_step_result: Any, analyze_step_result: Any
    ) -> dict[str, Any]:
        calls = preprocess_step_result["actualTools"]
        if not calls:  # no call to evaluate: Mastra's rules read the answer as it is
            return analyze_step_result
        return aligned_verdicts(analyze_step_result, "evaluations", calls, _missing_evaluation)

    described_step(
        one_evaluation_per_call,
        "One evaluation per tool call: extra evaluations dropped, missing ones not appropriate",
    )

    def accuracy(analyze_step_result: Any) -> float:
        evaluations = analyze_step_result["evaluations"]
        if not evaluations:
            return 0.0 if analyze_step_result.get("missingTools") else 1.0
        appropriate = sum(evaluation["wasAppropriate"] for evaluation in evaluations)
        return share(appropriate, len(evaluations), 1)

    def reason_prompt(run: Any, analyze_step_result: Any, score: Any) -> str:
        return REASON_PROMPT.render(
            input=user_text(run),
            score=f"{score:g}",
            evaluations=json_text(analyze_step_result["evaluations"]),
            missing=json_text(analyze_step_result.get("missingTools") or []),
        )

    return (
        llm_scorer(
            id,
            model,
            INSTRUCTIONS,
            factory="tool_call_accuracy_llm",
            name="Tool Call Accuracy (LLM)",
            description="Evaluates whether an agent selected appropriate tools for the given "
            "task using LLM analysis",
            type="agent",
        )
        .preprocess(tool_calls)
        .analyze(
            PromptStep(
                "Analyze the appropriateness of tool selections",
                evaluations_prompt,
                output_schema=Evaluations,
            )
        )
        .analyze(one_evaluation_per_call)
        .generate_score(accuracy)
        .generate_reason(
            PromptStep(
                "Generate human-readable explanation of tool selection evaluation", reason_prompt
            )
        )
    )


def _missing_evaluation(tool: str) -> dict[str, Any]:
    return {
        "toolCalled": tool,
        "wasAppropriate": False,
        "reasoning": "The judge gave no evaluation for this call.",
    }

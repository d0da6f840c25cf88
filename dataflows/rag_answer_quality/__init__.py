"""Score RAG answers: faithfulness to the retrieved context, completeness, answer relevancy.

Each answer is scored by two LLM-judged scorers (faithfulness, answer relevancy) and one code
scorer (completeness), each with a threshold on its average. The retrieved passages reach the
faithfulness judge the way a Mastra RAG agent records them: as the result of a retrieval tool
call in the agent's output.
"""

import logging
from typing import Any

from hamilton import contrib
from hamilton.function_modifiers import config

logger = logging.getLogger(__name__)

with contrib.catch_import_errors(__name__, __file__, logger):
    import pandas as pd

    import evaldag
    from evaldag import EvalResult, Judge, ScorerWithThreshold
    from evaldag.messages import as_run_output
    from evaldag.scorers import answer_relevancy, completeness, faithfulness


def raw_rag_answers(rag_answers_path: str) -> pd.DataFrame:
    """The answers as stored: a JSON Lines file with ``question``, ``answer`` and ``contexts``.

    ``contexts`` is the list of passages the retriever returned for the question. Other keys
    (an ``id``, the retriever's settings) are carried into the results.
    """
    return pd.read_json(rag_answers_path, lines=True, dtype=False)


def rag_dataset(raw_rag_answers: pd.DataFrame, retrieval_tool: str = "retrieve") -> pd.DataFrame:
    """One eval item per answer: the question as ``input``; as ``output``, the assistant's
    message with its retrieval call (the passages are the call's result) and the answer.

    :param retrieval_tool: the tool name the retrieval call is recorded under.
    """
    missing = {"question", "answer", "contexts"} - set(raw_rag_answers.columns)
    if missing:
        raise ValueError(
            f"RAG answers need the columns question, answer and contexts; missing "
            f"{sorted(missing)} (found {list(raw_rag_answers.columns)})"
        )
    dataset = raw_rag_answers.drop(columns=["question", "answer", "contexts"])
    dataset.insert(0, "input", raw_rag_answers["question"])
    dataset.insert(
        1,
        "output",
        [
            _answer_messages(question, answer, list(contexts), retrieval_tool)
            for question, answer, contexts in zip(
                raw_rag_answers["question"],
                raw_rag_answers["answer"],
                raw_rag_answers["contexts"],
                strict=True,
            )
        ],
    )
    return dataset


def _answer_messages(
    question: str, answer: str, contexts: list[str], retrieval_tool: str
) -> list[dict[str, Any]]:
    retrieval = {"toolName": retrieval_tool, "args": {"query": question}, "result": contexts}
    message = {"role": "assistant", "content": answer, "toolInvocations": [retrieval]}
    return [m.to_dict() for m in as_run_output([message])]


def judge(
    judge_model: str,
    judge_api_base: str | None = None,
    judge_api_key: str | None = None,
    judge_cache_dir: str | None = None,
) -> Judge:
    """The LLM judge for faithfulness and answer relevancy.

    :param judge_model: a litellm model string, e.g. ``openai/gpt-4o-mini``, or ``local``.
    :param judge_api_base: the provider's base URL, for self-hosted OpenAI-compatible servers.
    :param judge_api_key: the provider key; None lets litellm read it from the environment.
    :param judge_cache_dir: a directory for the judge's reply cache; None for no cache.
    """
    settings: dict[str, Any] = {"api_base": judge_api_base, "api_key": judge_api_key}
    if judge_cache_dir is not None:
        settings["cache"] = judge_cache_dir
    return Judge(judge_model, **{k: v for k, v in settings.items() if v is not None})


def faithfulness_scorer(judge: Judge, min_faithfulness: float = 0.7) -> ScorerWithThreshold:
    """Faithfulness: the share of an answer's claims its retrieved passages support."""
    return faithfulness(judge).with_threshold(min_faithfulness)


def answer_relevancy_scorer(
    judge: Judge, min_answer_relevancy: float = 0.7
) -> ScorerWithThreshold:
    """Answer relevancy: the share of an answer's statements that address the question."""
    return answer_relevancy(judge).with_threshold(min_answer_relevancy)


def completeness_scorer(min_completeness: float = 0.5) -> ScorerWithThreshold:
    """Completeness (code): how many of the question's terms the answer covers."""
    return completeness().with_threshold(min_completeness)


@config.when_not(scoring="code_only")
def rag_scorers__judged(
    faithfulness_scorer: ScorerWithThreshold,
    answer_relevancy_scorer: ScorerWithThreshold,
    completeness_scorer: ScorerWithThreshold,
) -> list[ScorerWithThreshold]:
    """The three scorers, each with its threshold."""
    return [faithfulness_scorer, answer_relevancy_scorer, completeness_scorer]


@config.when(scoring="code_only")
def rag_scorers__code_only(completeness_scorer: ScorerWithThreshold) -> list[ScorerWithThreshold]:
    """Completeness alone: no judge, no cost (a quick check before a judged run)."""
    return [completeness_scorer]


def eval_result(
    rag_dataset: pd.DataFrame, rag_scorers: list[ScorerWithThreshold], concurrency: int = 8
) -> EvalResult:
    """Every answer scored by every scorer, with thresholds and a verdict.

    :param concurrency: judge calls in flight at once.
    """
    return evaldag.run_evals(rag_dataset, scorers=rag_scorers, concurrency=concurrency)


def verdict(eval_result: EvalResult) -> str:
    """``passed`` when every scorer's average met its threshold, else ``scored``."""
    return eval_result.verdict


def scorer_summary(eval_result: EvalResult) -> pd.DataFrame:
    """One row per scorer: its average, threshold, whether it passed, and failed items."""
    rows = [
        {
            "scorer": result.id,
            "average": result.average_score,
            "threshold": result.threshold,
            "passed": result.passed,
            "errors": result.errors,
            "not_scorable": eval_result.summary.not_scorable.get(result.id, 0),
        }
        for result in eval_result.threshold_results
    ]
    return pd.DataFrame(rows).set_index("scorer")


def weak_answers(
    eval_result: EvalResult, rag_scorers: list[ScorerWithThreshold]
) -> pd.DataFrame:
    """One row per (answer, scorer) scoring below the scorer's threshold, or failing, worst
    first, with the judge's reason."""
    items = eval_result.items
    rows = []
    for entry in rag_scorers:
        sid, minimum = entry.scorer.id, entry.threshold
        scores = items[f"{sid}.score"]
        errors = items[f"{sid}.error"]
        weak = (scores < minimum) | errors.notna()
        for index in items.index[weak]:
            rows.append(
                {
                    "item": index,
                    "question": items.at[index, "input"],
                    "scorer": sid,
                    "score": scores[index],
                    "reason": items.at[index, f"{sid}.reason"],
                    "error": errors[index],
                }
            )
    frame = pd.DataFrame(rows, columns=["item", "question", "scorer", "score", "reason", "error"])
    return frame.sort_values("score", na_position="first", kind="stable").reset_index(drop=True)


def judge_usage(eval_result: EvalResult) -> pd.DataFrame:
    """Judge calls, tokens and cost per scorer and in total (empty without judge calls)."""
    rows = {sid: usage.model_dump() for sid, usage in eval_result.usage.items()}
    return pd.DataFrame.from_dict(rows, orient="index")


if __name__ == "__main__":
    import os
    import sys
    from pathlib import Path

    from hamilton import driver

    # A judged run needs a judge: EVALDAG_JUDGE_MODEL=openai/gpt-4o-mini (with OPENAI_API_KEY)
    # or EVALDAG_JUDGE_MODEL=local (pip install 'evaldag[local]'). Without it, code only.
    judge_model = os.environ.get("EVALDAG_JUDGE_MODEL")
    scoring = {} if judge_model else {"scoring": "code_only"}
    dr = driver.Builder().with_modules(sys.modules[__name__]).with_config(scoring).build()
    driver.Builder().with_modules(sys.modules[__name__]).build().display_all_functions(
        str(Path(__file__).with_name("dag.png")), deduplicate_inputs=True, show_legend=False
    )
    answers = pd.DataFrame(
        [
            {
                "question": "When does the Louvre open on Fridays?",
                "answer": "On Fridays the Louvre opens at 9 am and closes at 9:45 pm.",
                "contexts": ["The Louvre is open from 9 am to 6 pm, and until 9:45 pm on Fridays."],
            },
            {
                "question": "How long is the Seine?",
                "answer": "The Seine is 777 km long and flows through Lyon.",
                "contexts": ["The Seine is a 777-kilometre river that flows through Paris."],
            },
        ]
    )
    inputs = {"judge_model": judge_model} if judge_model else {}
    outputs = dr.execute(
        ["verdict", "scorer_summary", "weak_answers"],
        overrides={"raw_rag_answers": answers},
        inputs=inputs,
    )
    if not judge_model:
        print("No EVALDAG_JUDGE_MODEL set: scored completeness only.")
    print(f"verdict: {outputs['verdict']}")
    print(outputs["scorer_summary"].to_string())
    print(outputs["weak_answers"][["question", "scorer", "score"]].to_string())

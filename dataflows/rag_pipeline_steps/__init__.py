"""A RAG pipeline (retrieve → rerank → answer) as a Hamilton dataflow, scored node by node.

The pipeline is the first half of this module; the second half evaluates it with evaldag,
running the pipeline once per question as a workflow target (``evaldag.workflow``): the
retrieval node is scored on whether it found the expected passage, the reranking node on where
it put it, the answer (the pipeline's output) on whether it holds the expected fact, and the
execution path (captured with Hamilton's lifecycle hooks) against the expected one.
"""

import logging
import re
import sys
from typing import Any

from hamilton import contrib
from hamilton.function_modifiers import config

logger = logging.getLogger(__name__)

with contrib.catch_import_errors(__name__, __file__, logger):
    import pandas as pd

    import evaldag
    from evaldag import EvalResult, Workflow, create_scorer, scorers

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset(
    "a an and are at by did does do for from how in is it of on the to was what when where which "
    "who why with".split()
)


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


# --- the pipeline ------------------------------------------------------------------------------


def retrieved_passages(question: str, corpus: dict[str, str], top_k: int = 3) -> list[dict]:
    """The ``top_k`` passages sharing the most words with the question, best first.

    :param corpus: passage id → passage text.
    """
    asked = set(_terms(question))
    found = [
        {"id": pid, "text": text, "overlap": len(asked & set(_terms(text)))}
        for pid, text in corpus.items()
    ]
    found = [passage for passage in found if passage["overlap"]]
    return sorted(found, key=lambda passage: -passage["overlap"])[:top_k]


def reranked_passages(retrieved_passages: list[dict], question: str) -> list[dict]:
    """The retrieved passages ordered by the share of the question's words each holds, ties to
    the shorter passage; an empty retrieval has nothing to rerank (an error)."""
    if not retrieved_passages:
        raise ValueError(f"nothing was retrieved for {question!r}")
    asked = _terms(question)

    def coverage(passage: dict) -> tuple[float, int]:
        held = set(_terms(passage["text"]))
        return (-sum(term in held for term in asked) / len(asked), len(passage["text"]))

    return sorted(retrieved_passages, key=coverage)


@config.when_not(answering="llm")
def answer__extractive(reranked_passages: list[dict], question: str) -> str:
    """The sentence of the top passage sharing the most words with the question."""
    asked = set(_terms(question))
    sentences = re.split(r"(?<=[.!?])\s+", reranked_passages[0]["text"])
    return max(sentences, key=lambda sentence: len(asked & set(_terms(sentence))))


@config.when(answering="llm")
def answer__llm(
    reranked_passages: list[dict],
    question: str,
    answer_model: str,
    answer_api_base: str | None = None,
    answer_api_key: str | None = None,
) -> str:
    """The model's answer from the reranked passages (a litellm model string)."""
    import litellm

    passages = "\n".join(f"[{p['id']}] {p['text']}" for p in reranked_passages)
    response = litellm.completion(
        model=answer_model,
        api_base=answer_api_base,
        api_key=answer_api_key,
        messages=[
            {"role": "system", "content": "Answer in one sentence from the passages only."},
            {"role": "user", "content": f"Passages:\n{passages}\n\nQuestion: {question}"},
        ],
    )
    return response.choices[0].message.content


# --- the evaluation ----------------------------------------------------------------------------

PIPELINE = ("retrieved_passages", "reranked_passages", "answer")


def rag_questions(rag_questions_path: str) -> pd.DataFrame:
    """The questions: a JSON Lines file with ``question``, ``expected_passage`` (the id of the
    passage that answers it) and ``expected_answer`` (a fact the answer must hold)."""
    return pd.read_json(rag_questions_path, lines=True, dtype=False)


def rag_dataset(rag_questions: pd.DataFrame) -> pd.DataFrame:
    """One eval item per question: the question as ``input`` (the pipeline's input), the
    expected passage and fact as ``ground_truth``; other columns are carried through."""
    missing = {"question", "expected_passage", "expected_answer"} - set(rag_questions.columns)
    if missing:
        raise ValueError(f"RAG questions need the columns {sorted(missing)}")
    dataset = rag_questions.drop(columns=["question", "expected_passage", "expected_answer"])
    dataset.insert(0, "input", rag_questions["question"])
    dataset.insert(
        1,
        "ground_truth",
        [
            {"passage": passage, "answer": answer}
            for passage, answer in zip(
                rag_questions["expected_passage"], rag_questions["expected_answer"], strict=True
            )
        ],
    )
    return dataset


def rag_workflow(
    corpus: dict[str, str],
    top_k: int = 3,
    answering: str = "extractive",
    answer_model: str | None = None,
    answer_api_base: str | None = None,
    answer_api_key: str | None = None,
) -> Workflow:
    """The pipeline of this module as an evaldag workflow target: one execution per question,
    up to ``answer``, every node's inputs, output and duration recorded."""
    fixed = {"corpus": corpus, "top_k": top_k}
    if answering == "llm":
        fixed.update(
            answer_model=answer_model,
            answer_api_base=answer_api_base,
            answer_api_key=answer_api_key,
        )
    return evaldag.workflow(
        sys.modules[__name__], ["answer"], config={"answering": answering}, inputs=fixed
    )


def _expected_passage_found(run: Any) -> float:
    return float(run.ground_truth["passage"] in [p["id"] for p in run.output])


def _reciprocal_rank(run: Any) -> float:
    ranked = [p["id"] for p in run.output]
    expected = run.ground_truth["passage"]
    return 1 / (ranked.index(expected) + 1) if expected in ranked else 0.0


def _fact_stated(run: Any) -> float:
    return float(run.ground_truth["answer"].lower() in str(run.output).lower())


def step_scorers(
    min_recall: float = 0.8, min_reciprocal_rank: float = 0.7, min_answer: float = 0.7
) -> dict[str, Any]:
    """Mastra's workflow scorer config: a scorer per node, the answer, and the path.

    :param min_recall: the share of questions whose expected passage must be retrieved.
    :param min_reciprocal_rank: the mean of 1 / the expected passage's rank after reranking.
    :param min_answer: the share of answers that must state the expected fact.
    """
    recall = create_scorer("recall", description="The expected passage was retrieved")
    rank = create_scorer("reciprocal-rank", description="1 / rank of the expected passage")
    fact = create_scorer("fact-stated", description="The answer states the expected fact")
    path = [{"stepType": "workflow_step", "name": name} for name in PIPELINE]
    return {
        "steps": {
            "retrieved_passages": [
                recall.generate_score(_expected_passage_found).with_threshold(min_recall)
            ],
            "reranked_passages": [
                rank.generate_score(_reciprocal_rank).with_threshold(min_reciprocal_rank)
            ],
        },
        "workflow": [fact.generate_score(_fact_stated).with_threshold(min_answer)],
        "trajectory": [
            scorers.trajectory_accuracy(path, {"ordering": "strict"}).with_threshold(1.0)
        ],
    }


def eval_result(
    rag_dataset: pd.DataFrame,
    rag_workflow: Workflow,
    step_scorers: dict[str, Any],
    concurrency: int = 4,
) -> EvalResult:
    """Every question through the pipeline, every node's output scored (a failing node is that
    question's target error, failing its answer and that node's scorers; the nodes before it
    and the path up to it are still scored, and the other questions go on)."""
    return evaldag.run_evals(
        rag_dataset, target=rag_workflow, scorers=step_scorers, concurrency=concurrency
    )


def verdict(eval_result: EvalResult) -> str | None:
    """``passed``, or ``scored`` when a node's, the answer's or the path's average missed its
    threshold."""
    return eval_result.verdict


def node_scores(eval_result: EvalResult) -> pd.DataFrame:
    """Per scored node (and ``answer`` for the output, ``path`` for the trajectory): scorer,
    average, threshold, passed, and the questions it could not score."""
    rows = []
    for result in eval_result.threshold_results:
        group, _, rest = result.id.partition(".")
        node, _, scorer = rest.rpartition(".") if group == "steps" else ("", "", rest)
        rows.append(
            {
                "node": node or {"workflow": "answer", "trajectory": "path"}[group],
                "scorer": scorer,
                "average": result.average_score,
                "threshold": result.threshold,
                "passed": result.passed,
                "errors": result.errors,
            }
        )
    return pd.DataFrame(
        rows, columns=["node", "scorer", "average", "threshold", "passed", "errors"]
    )


def failed_questions(eval_result: EvalResult) -> pd.DataFrame:
    """The questions the pipeline failed on, with the node and its error."""
    items = eval_result.items
    failed = items[items["target_error"].notna()]
    return pd.DataFrame({"question": failed["input"], "error": failed["target_error"]})


if __name__ == "__main__":
    from pathlib import Path

    from hamilton import driver

    dr = driver.Builder().with_modules(sys.modules[__name__]).build()
    dr.display_all_functions(
        str(Path(__file__).with_name("dag.png")), deduplicate_inputs=True, show_legend=False
    )
    corpus = {
        "louvre": "The Louvre opens at 9 am. It closes at 9:45 pm on Fridays.",
        "seine": "The Seine is 777 km long. It flows through Paris.",
        "eiffel": "The Eiffel Tower is 330 m tall. It was finished in 1889.",
    }
    questions = pd.DataFrame(
        [
            {
                "question": "When does the Louvre close on Fridays?",
                "expected_passage": "louvre",
                "expected_answer": "9:45 pm",
            },
            {
                "question": "How tall is the Eiffel Tower?",
                "expected_passage": "eiffel",
                "expected_answer": "330 m",
            },
            {
                "question": "Who painted the Mona Lisa?",
                "expected_passage": "louvre",
                "expected_answer": "Leonardo",
            },
        ]
    )
    outputs = dr.execute(
        ["verdict", "node_scores", "failed_questions"],
        overrides={"rag_questions": questions},
        inputs={"corpus": corpus},
    )
    print(f"verdict: {outputs['verdict']}")
    print(outputs["node_scores"].to_string())
    print(outputs["failed_questions"].to_string())

"""How far to trust a judge: an LLM scorer run on human-labelled data, and its agreement.

Two labelled sets (not shipped with evaldag; read from ``datasets_dir``, see README.md):

- **FaithBench**: summaries of a passage by 10 LLMs, labelled by people for hallucinations
  (``worst-label``: Consistent, Benign, Questionable, Unwanted). Scored by ``faithfulness``
  (a high score should mean Consistent or Benign) or ``hallucination`` (a high score should
  mean Questionable or Unwanted), the passage as the context.
- **HaluEval (general)**: ChatGPT's answers to user queries, labelled ``hallucination``
  yes or no, without a grounding context; scored by a ``classifier`` asking the judge whether
  the answer states anything false (the probability it gives is the score).

The nodes read a sample of the set (balanced across FaithBench's LLMs), score it with
``run_evals``, and compute ``evaldag.agreement`` overall and per ``LLM``: ``judge_agreement``
(the figures with their intervals), ``agreement_figures`` (one row per slice and figure) and
``agreement_report`` (Markdown).
"""

import logging
from pathlib import Path

from hamilton import contrib
from hamilton.function_modifiers import config

logger = logging.getLogger(__name__)

with contrib.catch_import_errors(__name__, __file__, logger):
    import pandas as pd

    import evaldag
    from evaldag.scorers.llm import classifier, faithfulness, hallucination

FAITHBENCH = "faithbench/FaithBench.csv"
HALUEVAL = "halueval-general/general_data.json"
#: FaithBench's usual binary reading: these worst labels are faithful, the others are not.
FAITHFUL_LABELS = ("Consistent", "Benign")
HALLUCINATED_LABELS = ("Questionable", "Unwanted")
SUMMARIZE = "Summarize the passage."
HALUEVAL_QUESTION = (
    "Does the assistant's answer state anything false, made up or impossible to verify, "
    "rather than only what is true?"
)


def _balanced_sample(data: pd.DataFrame, items: int, seed: int, by: str | None) -> pd.DataFrame:
    """``items`` rows drawn at random (seeded), taking from each value of ``by`` in turn."""
    shuffled = data.sample(frac=1, random_state=seed)
    if by is not None:
        turn = shuffled.groupby(by, sort=False).cumcount()
        shuffled = shuffled.iloc[turn.argsort(kind="stable")]
    return shuffled.head(items).sort_index()


@config.when(dataset="faithbench")
def labelled_items__faithbench(datasets_dir: str, items: int = 200, seed: int = 0) -> pd.DataFrame:
    """FaithBench's summaries as eval items: the passage the context, the summary the output,
    and the annotators' ``worst-label`` and ``best-label``; as many from each LLM.

    :param datasets_dir: the folder holding ``faithbench/FaithBench.csv``.
    :param items: how many summaries to score (800 at most).
    :param seed: the sample's seed.
    """
    data = pd.read_csv(Path(datasets_dir) / FAITHBENCH)
    data.insert(0, "id", [f"faithbench-{n}" for n in data.index])
    sample = _balanced_sample(data, items, seed, by="LLM")
    return pd.DataFrame(
        {
            "id": sample["id"],
            "input": SUMMARIZE,
            "output": sample["summary"].str.strip(),
            "contexts": sample["source"].map(lambda source: [source]),
            "LLM": sample["LLM"],
            "worst-label": sample["worst-label"],
            "best-label": sample["best-label"],
        }
    ).reset_index(drop=True)


@config.when(dataset="halueval")
def labelled_items__halueval(datasets_dir: str, items: int = 200, seed: int = 0) -> pd.DataFrame:
    """HaluEval's general answers as eval items: the query the input, ChatGPT's answer the
    output, ``hallucination`` yes or no.

    :param datasets_dir: the folder holding ``halueval-general/general_data.json``.
    :param items: how many answers to score (4,507 at most).
    :param seed: the sample's seed.
    """
    data = pd.read_json(Path(datasets_dir) / HALUEVAL, lines=True)
    sample = _balanced_sample(data, items, seed, by=None)
    return pd.DataFrame(
        {
            "id": "halueval-" + sample["ID"].astype(str),
            "input": sample["user_query"],
            "output": sample["chatgpt_response"],
            "hallucination": sample["hallucination"],
        }
    ).reset_index(drop=True)


@config.when(dataset="faithbench")
def label_column__faithbench() -> str:
    """The annotators' worst label: a summary is as good as its most severe annotation."""
    return "worst-label"


@config.when(dataset="halueval")
def label_column__halueval() -> str:
    """HaluEval's yes/no hallucination label."""
    return "hallucination"


@config.when(dataset="faithbench")
def slice_column__faithbench() -> str | None:
    """FaithBench's figures again per summarising LLM."""
    return "LLM"


@config.when(dataset="halueval")
def slice_column__halueval() -> str | None:
    """HaluEval's general set has one answering model: no slices."""
    return None


def judge(
    judge_model: str = "local",
    judge_api_base: str | None = None,
    judge_api_key: str | None = None,
    judge_timeout: float = 900,
) -> evaldag.Judge:
    """The judge: the bundled local judge by default (one call at a time: its server decodes
    one), or any litellm model.

    :param judge_model: ``"local"`` or a litellm model name (``"openai/gpt-4o-mini"``).
    :param judge_api_base: the model's endpoint, for a self-hosted one.
    :param judge_api_key: its key (default: the provider's key variable, e.g. OPENAI_API_KEY).
    :param judge_timeout: seconds a judge call may take (a loaded CPU makes long claim lists
        slow).
    """
    if judge_model == "local":
        return evaldag.Judge("local", max_concurrency=1, timeout=judge_timeout, max_retries=1)
    return evaldag.Judge(
        judge_model, api_base=judge_api_base, api_key=judge_api_key, timeout=judge_timeout
    )


@config.when(scorer="faithfulness")
def judged_scorer__faithfulness(judge: evaldag.Judge) -> evaldag.Scorer:
    """Faithfulness of the summary to the passage (high: faithful), without the reason call."""
    return faithfulness(judge, context="contexts").without_reason()


@config.when(scorer="hallucination")
def judged_scorer__hallucination(judge: evaldag.Judge) -> evaldag.Scorer:
    """Hallucination of the summary against the passage (high: hallucinated)."""
    return hallucination(judge, context="contexts").without_reason()


@config.when(scorer="classifier")
def judged_scorer__classifier(judge: evaldag.Judge) -> evaldag.Scorer:
    """Whether the answer states anything false (the judge's probability of yes)."""
    return classifier(judge, HALUEVAL_QUESTION, boolean=True, id="hallucination-classifier")


@config.when(scorer="faithfulness")
def positive_labels__faithfulness() -> list[str]:
    """The labels a high faithfulness score should mean."""
    return list(FAITHFUL_LABELS)


@config.when(scorer="hallucination")
def positive_labels__hallucination() -> list[str]:
    """The labels a high hallucination score should mean."""
    return list(HALLUCINATED_LABELS)


@config.when(scorer="classifier")
def positive_labels__classifier() -> list[str]:
    """HaluEval's answers labelled hallucinated."""
    return ["yes"]


def eval_result(
    labelled_items: pd.DataFrame,
    judged_scorer: evaldag.Scorer,
    concurrency: int = 1,
    checkpoint: str | None = None,
) -> evaldag.EvalResult:
    """The judge's scores on the labelled items.

    :param concurrency: judge calls in flight (1 for the local judge).
    :param checkpoint: a results .parquet path: finished batches are kept beside it, and a
        run stopped halfway goes on from them.
    """
    return evaldag.run_evals(
        labelled_items,
        scorers=[judged_scorer],
        concurrency=concurrency,
        batch_size=4,
        checkpoint=checkpoint,
        progress=False,
    )


def judge_agreement(
    eval_result: evaldag.EvalResult,
    label_column: str,
    positive_labels: list[str],
    slice_column: str | None,
    threshold: float = 0.5,
    resamples: int = 2_000,
) -> evaldag.Agreement:
    """How the judge's scores agree with the human labels, overall and per slice."""
    return evaldag.agreement(
        eval_result,
        labels=label_column,
        positive=positive_labels,
        threshold=threshold,
        by=slice_column,
        resamples=resamples,
    )


def agreement_figures(judge_agreement: evaldag.Agreement) -> pd.DataFrame:
    """One row per slice and figure: value and interval."""
    return judge_agreement.to_frame()


def agreement_report(judge_agreement: evaldag.Agreement) -> str:
    """The figures as Markdown: all items, then each slice's balanced accuracy and κ."""
    overall = judge_agreement.overall
    c = overall.confusion
    lines = [
        (
            f"**{judge_agreement.scorer_id}** against `{judge_agreement.labels}` "
            f"(positive: {', '.join(map(str, judge_agreement.positive))}; score >= "
            f"{judge_agreement.threshold:g}): {overall.compared} of {overall.items} items compared "
            f"({overall.failed} failed, {overall.not_scorable} not scorable)."
        ),
        "",
        "| figure | value | 95 % interval |",
        "|---|---:|---:|",
    ]
    for name, figure in overall.figures.items():
        interval = (
            "–"
            if figure.interval is None
            else f"{figure.interval.low:.3f} to {figure.interval.high:.3f}"
        )
        value = "–" if figure.value is None else f"{figure.value:.3f}"
        lines.append(f"| {name} | {value} | {interval} |")
    if c is not None:
        lines += [
            "",
            (
                f"Confusion: {c.true_positive} true positives, {c.false_positive} false positives, "
                f"{c.false_negative} false negatives, {c.true_negative} true negatives."
            ),
        ]
    if judge_agreement.slices:
        lines += [
            "",
            f"| {judge_agreement.by} | compared | balanced accuracy | κ |",
            "|---|---:|---:|---:|",
        ]
        for part in judge_agreement.slices:
            cells = [
                "–" if part.figures[n].value is None else f"{part.figures[n].value:.3f}"
                for n in ("balanced_accuracy", "cohen_kappa")
            ]
            lines.append(f"| {part.slice} | {part.compared} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    from hamilton import driver

    folder = Path(__file__).resolve().parent
    config = {"dataset": "faithbench", "scorer": "faithfulness"}
    dr = driver.Builder().with_modules(sys.modules[__name__]).with_config(config).build()
    dr.display_all_functions(str(folder / "dag.png"), deduplicate_inputs=True, show_legend=False)
    datasets = next(
        (p / "shared" / "datasets" for p in folder.parents if (p / "shared" / "datasets").is_dir()),
        None,
    )
    if datasets is None:
        raise SystemExit("no shared/datasets folder beside this one or its parents")
    # A smoke example: 6 summaries, one of each of 6 LLMs, through the local judge (minutes on
    # a CPU).
    outputs = dr.execute(
        ["agreement_report"], inputs={"datasets_dir": str(datasets), "items": 6, "resamples": 200}
    )
    print(outputs["agreement_report"])

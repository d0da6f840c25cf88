"""``evaldag agree EVAL --data labelled.jsonl --labels COLUMN``: how far to trust a judge.

Runs the eval (or reads a results file) and prints how its scorer agrees with the human labels
in the data's column, every figure with its bootstrap interval, per slice with ``--by``; with
``--vs`` a second eval (another judge or prompt) on the same data, and the difference. Exits 0
once the figures are printed, 3 on an error, as every command.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaldag._cli.compare import text_table

if TYPE_CHECKING:
    import pandas as pd

    from evaldag._agreement.agreement import Agreement, SliceAgreement
    from evaldag._agreement.judges import JudgeComparison
    from evaldag._results.eval_result import EvalResult

EXIT_DONE = 0


def add_agree_command(commands: argparse._SubParsersAction) -> None:
    """The ``agree`` subcommand of the ``evaldag`` parser."""
    agree = commands.add_parser(
        "agree",
        help="how often a judge agrees with human labels, with intervals; --vs compares two",
        description="Run EVAL on labelled data (or read a results file) and print how its "
        "scorer's scores agree with the human labels in the data's column --labels: for binary "
        "labels the confusion matrix, precision, recall, F1, balanced accuracy, Cohen's kappa, "
        "ROC-AUC and the threshold that maximises balanced accuracy; for ordinal or numeric "
        "labels Spearman's rho, Kendall's tau-b and the mean absolute error; each with a "
        "bootstrap interval. Needs the extra: pip install 'evaldag[agreement]'.",
    )
    agree.add_argument(
        "eval",
        metavar="EVAL",
        help="an eval file or module (as for 'evaldag run'), or a results .parquet file",
    )
    agree.add_argument(
        "--data", metavar="FILE", help="the labelled items (.jsonl, .csv or .parquet)"
    )
    agree.add_argument(
        "--labels", required=True, metavar="COLUMN", help="the data column of human labels"
    )
    agree.add_argument(
        "--scorer", metavar="ID", help="the scorer compared (default: the eval's only scorer)"
    )
    agree.add_argument(
        "--positive",
        action="append",
        metavar="LABEL",
        help="a label a high score should mean (repeatable); every other label is negative. "
        "Not needed for true/false or 0/1 labels",
    )
    agree.add_argument(
        "--order",
        metavar="L1,L2,...",
        help="ordinal text labels, from the one a low score should mean to the one a high "
        "score should mean",
    )
    agree.add_argument(
        "--threshold",
        type=float,
        metavar="X",
        help="binary labels: a score at or above X is the judge saying positive (default: 0.5)",
    )
    agree.add_argument("--by", metavar="COLUMN", help="every figure again per value of COLUMN")
    agree.add_argument(
        "--vs",
        metavar="EVAL",
        help="a second eval (another judge or prompt) or results file, run on the same data: "
        "the difference in agreement with a paired interval, McNemar's test, cost and time",
    )
    agree.add_argument(
        "--scorer-vs", metavar="ID", help="the scorer of --vs (default: its only scorer)"
    )
    agree.add_argument(
        "--key",
        metavar="COLUMN",
        help="with --vs: the data column pairing the items (default: id, else input, else order)",
    )
    agree.add_argument("--out", metavar="FILE", help="write EVAL's results to this .parquet file")
    agree.add_argument(
        "--json", metavar="FILE", help="write the figures (and the comparison) as JSON"
    )
    agree.add_argument(
        "--report",
        metavar="FILE",
        help="write EVAL's HTML report with an agreement section (confusion matrix, ROC curve)",
    )
    agree.add_argument(
        "--concurrency",
        type=int,
        default=8,
        metavar="N",
        help="judge calls in flight at once (default: 8)",
    )
    agree.add_argument(
        "--resamples",
        type=int,
        default=2_000,
        metavar="N",
        help="bootstrap resamples per figure (default: 2000)",
    )
    agree.add_argument(
        "--seed", type=int, default=0, metavar="N", help="the bootstrap's seed (default: 0)"
    )
    agree.set_defaults(command=agree_command)


def agree_command(args: argparse.Namespace) -> int:
    """Print the agreement (and the comparison with ``--vs``); exit 0."""
    from evaldag._agreement.agreement import agreement
    from evaldag._agreement.judges import compare_judges
    from evaldag.errors import EvalDagError

    if args.scorer_vs and not args.vs:
        raise EvalDagError("INVALID_CLI_OPTIONS", "--scorer-vs needs --vs: the second eval")
    result = scored(args.eval, args.data, args.concurrency, out=args.out)
    options: dict[str, Any] = {
        "labels": args.labels,
        "positive": _positive(result.items, args.labels, args.positive),
        "order": args.order.split(",") if args.order else None,
        "threshold": args.threshold,
        "resamples": args.resamples,
        "seed": args.seed,
    }
    found = agreement(result, scorer=args.scorer, by=args.by, **options)
    print(agreement_text(found))
    comparison = None
    if args.vs:
        other = scored(args.vs, args.data, args.concurrency, out=None)
        comparison = compare_judges(
            result, other, scorer=args.scorer, scorer_b=args.scorer_vs, key=args.key, **options
        )
        comparison = comparison.model_copy(
            update={
                "a": comparison.a.model_copy(update={"source": args.eval}),
                "b": comparison.b.model_copy(update={"source": args.vs}),
            }
        )
        print()
        print(comparison_text(comparison))
    if args.json:
        from evaldag._io.files import atomic_write_text

        payload = found if comparison is None else comparison
        atomic_write_text(args.json, payload.model_dump_json(indent=2))
        print(f"figures: {args.json}")
    if args.report:
        from evaldag._report.html import write_report

        shown = [found] if comparison is None else [found, comparison.b.agreement]
        write_report(result, args.report, title=f"Agreement of {found.scorer_id}", agreement=shown)
        print(f"report: {args.report}")
    return EXIT_DONE


def scored(spec: str, data: str | None, concurrency: int, *, out: str | None) -> EvalResult:
    """A results file read, or an eval file run on ``data`` (or the data it defines)."""
    from evaldag._eval.eval_file import eval_data, eval_definition
    from evaldag._eval.run_evals import run_evals
    from evaldag._results.eval_result import EvalResult
    from evaldag.errors import EvalDagError

    if spec.endswith(".parquet") and Path(spec).is_file():
        if data is not None:
            raise EvalDagError(
                "INVALID_CLI_OPTIONS",
                f"{spec} is a results file, scored already: leave out --data",
            )
        return EvalResult.read_parquet(spec)
    definition = eval_definition(spec)
    items = data if data is not None else eval_data(definition)
    if items is None:
        raise EvalDagError(
            "INVALID_CLI_OPTIONS",
            f"no labelled data: give --data FILE, or define data in {definition.name}",
        )
    return run_evals(
        items,
        scorers=definition.scorers,
        gates=definition.gates,
        target=definition.target,
        columns=definition.columns,
        concurrency=concurrency,
        out=out,
    )


def _positive(items: pd.DataFrame, column: str, given: list[str] | None) -> list[Any] | None:
    """The ``--positive`` texts as the column's values (a JSON file's true or 1 is no text)."""
    if not given or column not in items.columns:
        return given
    values = {_text(value): value for value in items[column].dropna()}
    return [values.get(_text(text), text) for text in given]


def _text(value: Any) -> str:
    """A label as the command line spells it: booleans in any case."""
    text = str(value)
    return text.lower() if text.lower() in ("true", "false") else text


def _name(figure: str) -> str:
    from evaldag._agreement.agreement import FIGURE_NAMES

    return FIGURE_NAMES[figure]


def _interval(figure: Any) -> str:
    if figure.value is None:
        return "undefined"
    if figure.interval is None:
        return f"{figure.value:.3f}"
    return f"{figure.value:.3f}  [{figure.interval.low:.3f}, {figure.interval.high:.3f}]"


def _counts(part: SliceAgreement) -> str:
    left = [f"{count:,} {reason}" for reason, count in part.left_out()]
    return f"{part.compared:,} of {part.items:,} items compared" + (
        f" ({', '.join(left)} left out)" if left else ""
    )


def agreement_text(found: Agreement) -> str:
    """The agreement as text: the counts, the figures with intervals, the confusion matrix,
    and each slice's figures."""
    if found.kind == "binary":
        rule = (
            f"positive: {', '.join(map(str, found.positive))}; the judge says positive at a "
            f"score >= {found.threshold:g}"
        )
    else:
        rule = f"graded{f': {found.order}' if found.order else ''}"
    overall = found.overall
    lines = [
        f"'{found.scorer_id}' against the labels in '{found.labels}' ({rule})",
        (
            f"  {_counts(overall)}; {found.level:.0%} bootstrap intervals, "
            f"{found.resamples:,} resamples"
        ),
    ]
    if overall.confusion is not None:
        c = overall.confusion
        lines += [
            "",
            "                    label positive  label negative",
            f"  judge positive  {c.true_positive:>14,}  {c.false_positive:>14,}",
            f"  judge negative  {c.false_negative:>14,}  {c.true_negative:>14,}",
        ]
    lines.append("")
    width = max(len(_name(name)) for name in overall.figures)
    lines += [
        f"  {_name(name):<{width}}  {_interval(figure)}" for name, figure in overall.figures.items()
    ]
    lines += [f"  note: {note}" for note in overall.notes]
    if found.slices:
        names = list(overall.figures)
        rows = [(found.by or "", "compared", *(_name(n) for n in names))]
        rows += [
            (
                part.slice or "",
                f"{part.compared:,}",
                *(
                    "-" if part.figures[n].value is None else f"{part.figures[n].value:.3f}"
                    for n in names
                ),
            )
            for part in found.slices
        ]
        lines += ["", f"  per {found.by} (intervals: --json, or Agreement.to_frame()):"]
        lines += text_table(rows, range(1, len(rows[0])))
    return "\n".join(lines)


def comparison_text(comparison: JudgeComparison) -> str:
    """Judge B against judge A: each figure on the paired items, B − A with its interval,
    McNemar's test, and each judge's spend."""
    a, b = comparison.a, comparison.b
    lines = [
        (
            f"B '{b.scorer_id}' ({b.source}) against A '{a.scorer_id}' ({a.source}) on "
            f"{comparison.paired:,} items both scored that have a label (paired by "
            f"'{comparison.item_key}'):"
        ),
        "",
    ]
    rows: list[tuple[str, ...]] = [("", "A", "B", "B - A", f"{comparison.level:.0%} interval")]
    for name, d in comparison.differences.items():
        rows.append(
            (
                _name(name),
                "-" if d.a is None else f"{d.a:.3f}",
                "-" if d.b is None else f"{d.b:.3f}",
                "-" if d.difference is None else f"{d.difference:+.3f}",
                "-" if d.interval is None else f"[{d.interval.low:+.3f}, {d.interval.high:+.3f}]",
            )
        )
    rows += [
        ("judge calls", f"{a.spend.calls:,}", f"{b.spend.calls:,}", "", ""),
        ("tokens", f"{a.spend.tokens:,}", f"{b.spend.tokens:,}", "", ""),
        ("cost (USD)", f"{a.spend.cost_usd:.4f}", f"{b.spend.cost_usd:.4f}", "", ""),
        ("judge time (s)", f"{a.spend.judge_seconds:.1f}", f"{b.spend.judge_seconds:.1f}", "", ""),
        (
            "median item (s)",
            *(
                "-" if s.median_item_seconds is None else f"{s.median_item_seconds:.2f}"
                for s in (a.spend, b.spend)
            ),
            "",
            "",
        ),
    ]
    lines += text_table(rows, range(1, len(rows[0])))
    if comparison.mcnemar is not None:
        m = comparison.mcnemar
        lines += [
            "",
            (
                f"  McNemar's exact test: A alone right on {m.a_only:,} items, B alone on "
                f"{m.b_only:,} (both right {m.both_right:,}, both wrong {m.both_wrong:,}): "
                f"p = {m.p_value:.3g}"
            ),
        ]
    return "\n".join(lines)

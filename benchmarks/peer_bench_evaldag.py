"""evaldag's faithfulness through ``run_evals`` in the peer bench (``../shared/peer-bench``).

The peer bench's own ``run_evaldag.py`` with ``run_evals`` imported with the other imports, as
the peers' runners import their ``evaluate`` (the shared runner imports it lazily, inside the
timed call: Hamilton and its extensions, ~3 s of CPU here), and with what this issue needs
measured: the client CPU spent inside ``run_evals`` (``time.process_time``, every thread of the
process: robust to the machine's load, unlike the bench's time-minus-import-wall estimate), the
judge's mean latency as the fake judge slept it (the ideal of a long-tailed run is concurrency /
mean latency), and the adaptive limit from the run's usage summary. ``benchmarks/peer_bench.sh``
runs it beside the other frameworks; on its own::

    JUDGE_URL=http://127.0.0.1:8765 DATASET=dataset.jsonl CONCURRENCY=16 EVALDAG_TRANSPORT=http \\
        python benchmarks/peer_bench_evaldag.py

Per item: claims -> verdicts -> reason (3 sequential judge calls); the passages reach the judge as
the result of a retrieval tool call in the assistant's output, as evaldag's RAG dataflow records
them. With EVALDAG_REASON=0 the scorer runs ``without_reason()``: claims -> verdicts, 2 calls an
item, the work Ragas' faithfulness does. Env: JUDGE_URL, DATASET, CONCURRENCY (16), TAG
(evaldag), RESULT, EVALDAG_TRANSPORT, EVALDAG_REASON.
"""

import json
import os
import time
import urllib.request

os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
STARTED = time.perf_counter()
import pandas as pd  # noqa: E402

import evaldag  # noqa: E402
from evaldag import run_evals  # noqa: E402 (the peers' runners import their evaluate functions too)
from evaldag.messages import as_run_output  # noqa: E402
from evaldag.scorers import faithfulness  # noqa: E402

IMPORT_S = time.perf_counter() - STARTED
JUDGE_URL = os.environ.get("JUDGE_URL", "http://127.0.0.1:8765").rstrip("/")
DATASET = os.environ.get("DATASET", "dataset.jsonl")
CONCURRENCY = int(os.environ.get("CONCURRENCY", "16"))
TAG = os.environ.get("TAG", "evaldag")
TRANSPORT = os.environ.get("EVALDAG_TRANSPORT")
REASON = os.environ.get("EVALDAG_REASON", "1") != "0"


def judge_stats() -> dict:
    """The fake judge's counters for this run's tag."""
    with urllib.request.urlopen(f"{JUDGE_URL}/stats") as response:
        return json.load(response).get(TAG, {})


def run_output(item: dict) -> list[dict]:
    call = {"toolName": "retrieve", "args": {"query": item["input"]}, "result": item["context"]}
    message = {"role": "assistant", "content": item["output"], "toolInvocations": [call]}
    return [m.to_dict() for m in as_run_output([message])]


def main() -> None:
    items = [json.loads(line) for line in open(DATASET) if line.strip()]
    frame = pd.DataFrame(
        {"input": [it["input"] for it in items], "output": [run_output(it) for it in items]}
    )
    settings = {
        "model": "openai/fake",
        "api_base": f"{JUDGE_URL}/{TAG}/v1",
        "api_key": "fake-key",
        "max_concurrency": CONCURRENCY,
    }
    if TRANSPORT:
        settings["transport"] = TRANSPORT
    scorer = faithfulness(evaldag.Judge(**settings))
    if not REASON:
        scorer = scorer.without_reason()
    before = judge_stats()
    wall, cpu = time.perf_counter(), time.process_time()
    result = run_evals(frame, scorers=[scorer], concurrency=CONCURRENCY, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = judge_stats()
    calls = after.get("requests", 0) - before.get("requests", 0)
    slept = after.get("slept_s", 0.0) - before.get("slept_s", 0.0)
    mean_latency = slept / calls if calls else None
    scores = result.items["faithfulness-scorer.score"]
    total = result.usage.get("total")
    limits = [limit.model_dump() for limit in total.judge_limits] if total else []
    out = {
        "framework": "evaldag",
        "variant": f"faithfulness via run_evals ({TRANSPORT or 'auto'}"
        + ("" if REASON else ", without_reason: 2 calls/item")
        + ")",
        "version": f"evaldag {evaldag.__version__}",
        "items": len(items),
        "concurrency": CONCURRENCY,
        "wall_s": round(wall, 3),
        "import_s": round(IMPORT_S, 3),
        "judge_calls": calls,
        "peak_in_flight": after.get("peak_in_flight"),
        "streamed": after.get("streamed"),
        "response_format": after.get("response_format"),
        "reply_kind": after.get("reply_kind"),
        "scored": int(scores.notna().sum()),
        "errors": int(scores.isna().sum()),
        "mean_score": round(float(scores.mean()), 4) if scores.notna().any() else None,
        "cpu_s": round(cpu, 3),
        "cpu_ms_per_call": round(cpu / calls * 1000, 3) if calls else None,
        "mean_latency_s": round(mean_latency, 4) if mean_latency else None,
        "ratio_to_ideal": round(calls / wall / (CONCURRENCY / mean_latency), 3)
        if mean_latency
        else None,
        "judge_limits": [
            {key: limit[key] for key in ("endpoint", "max_concurrency", "lowest", "final")}
            | {"changes": len(limit["changes"]) - 1}
            for limit in limits
        ],
    }
    line = json.dumps(out)
    print("RESULT " + line, flush=True)
    if os.environ.get("RESULT"):
        with open(os.environ["RESULT"], "w") as file:
            file.write(line + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# Faithfulness through run_evals beside its peers: the peer bench (../shared/peer-bench, read-only)
# copied to a scratch folder, with benchmarks/peer_bench_evaldag.py in place of its run_evaldag.py
# (and, when RATE_LIMITED_SHARE is set, benchmarks/peer_bench_storm_judge.py in front of its fake
# judge), run by its own run_all.sh. Figures go to $OUT (default benchmarks/results/peer-bench).
#
#   bash benchmarks/peer_bench.sh        # the bare client, evaldag-http and evaldag (on litellm)
#   ONLY="baseline ragas-llm_factory deepeval-shared evaldag-http" PY_DEEPEVAL=... PY_RAGAS=... \
#     bash benchmarks/peer_bench.sh                                 # beside the peers
#   LATENCY_SIGMA=0.99 bash benchmarks/peer_bench.sh                # long-tailed latencies
#   RATE_LIMITED_SHARE=0.3 ONLY=evaldag-http bash benchmarks/peer_bench.sh   # a 429 storm
#   NODE_PATH=~/.cache/evaldag-oracle/<stamp>/node_modules ONLY="baseline mastra evaldag-http" \
#     bash benchmarks/peer_bench.sh   # Mastra: the oracle's install (../shared/tools/oracle-run), Node 20+
#
# Every variable of run_all.sh applies (N, REPS, CONCURRENCY, LATENCY, PORT, PY_*); PY_EVALDAG
# defaults to this checkout's .venv. The peers' venvs come from ../shared/peer-bench/setup.sh.
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BENCH="${PEER_BENCH:-$ROOT/../shared/peer-bench}"
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cp "$BENCH"/*.py "$BENCH"/*.sh "$BENCH"/*.cjs "$SCRATCH"/
chmod u+w "$SCRATCH"/*
cp "$ROOT/benchmarks/peer_bench_evaldag.py" "$SCRATCH/run_evaldag.py"
if [ -n "${RATE_LIMITED_SHARE:-}" ]; then
  mv "$SCRATCH/fake_judge.py" "$SCRATCH/fake_judge_base.py"
  cp "$ROOT/benchmarks/peer_bench_storm_judge.py" "$SCRATCH/fake_judge.py"
  export RATE_LIMITED_SHARE
fi
export PY_EVALDAG="${PY_EVALDAG:-$ROOT/.venv/bin/python}"
export PY_DEEPEVAL="${PY_DEEPEVAL:-$ROOT/.venv/bin/python}"  # the baseline row needs openai only
export ONLY="${ONLY:-baseline evaldag-http evaldag}"
# run_all.sh sets transport="http" for its evaldag-http row; its evaldag row takes this one.
export EVALDAG_TRANSPORT="${EVALDAG_TRANSPORT:-litellm}"
export OUT="${OUT:-$ROOT/benchmarks/results/peer-bench}"
export PORT="${PORT:-$((20000 + RANDOM % 20000))}"
bash "$SCRATCH/run_all.sh"

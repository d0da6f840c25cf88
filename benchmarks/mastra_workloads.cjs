// The workloads of benchmarks/vs_mastra.py, run through Mastra's runEvals.
//
//   NODE_PATH=<oracle install>/node_modules node mastra_workloads.cjs WORKLOAD N [JUDGE_URL CONCURRENCY]
//
// WORKLOAD is one of
//   cheap         N items x 3 function scorers (one with a 0.7 threshold) + 2 gates, the
//                 workload of the oracle's lib/bench.mjs (and of run_evals_overhead.py);
//   completeness  N items of createCompletenessScorer() over 30-word inputs, 15-word outputs;
//   faithfulness  N items of createFaithfulnessScorer() against the OpenAI-compatible judge at
//                 JUDGE_URL (…/v1), runEvals concurrency CONCURRENCY;
//   text:SCORER   the first N pairs of the JSON file PAIRS ([{input, output}, ...]) through one
//                 code scorer (completeness, content-similarity, keyword-coverage,
//                 textual-difference or tone); PAIRS takes JUDGE_URL's place:
//                   node mastra_workloads.cjs text:completeness N PAIRS
// Each runEvals call gets a workflow target that returns the item's canned output (runEvals
// needs an Agent or a Workflow). A 50-item warm-up run comes first. Prints one JSON line:
// wall and CPU seconds (process.cpuUsage, user + system) around the measured runEvals call.
//
// CommonJS on purpose: the packages resolve through NODE_PATH, from the oracle's install.
'use strict';
const os = require('node:os');
const { z } = require('zod');
const { createScorer, runEvals } = require('@mastra/core/evals');
const { createWorkflow, createStep } = require('@mastra/core/workflows');
const { RequestContext } = require('@mastra/core/request-context');
const prebuilt = require('@mastra/evals/scorers/prebuilt');
const { createCompletenessScorer, createFaithfulnessScorer } = prebuilt;
const { createTestMessage } = require('@mastra/evals/scorers/utils');

const WORDS = ['alpha', 'river', 'mountain', 'quickly', 'compute', 'the', 'weather', 'Paris', 'report', 'summary',
  'analysis', 'green', 'blue', 'dataset', 'model', 'evaluate', 'score', 'gate', 'threshold', 'agent'];
const CONTEXT = ['Bern is the capital of Switzerland.', 'The Aare flows through Bern.'];

function sentence(i, len) {
  const w = [];
  for (let k = 0; k < len; k++) w.push(WORDS[(i * 7 + k * 13) % WORDS.length]);
  return w.join(' ') + '.';
}

function items(n, inputText, outputText) {
  const data = [];
  const outputs = [];
  for (let i = 0; i < n; i++) {
    data.push({
      input: {
        inputMessages: [createTestMessage({ content: inputText(i), role: 'user', id: `user-${i}` })],
        rememberedMessages: [], systemMessages: [], taggedSystemMessages: {},
      },
      requestContext: new RequestContext([['i', i]]),
    });
    outputs.push([createTestMessage({ content: outputText(i), role: 'assistant', id: `assistant-${i}` })]);
  }
  return { data, outputs };
}

function workflowTarget(outputs) {
  const step = createStep({
    id: 'respond', inputSchema: z.any(), outputSchema: z.any(),
    execute: async ({ requestContext }) => outputs[requestContext.get('i')],
  });
  return createWorkflow({ id: 'bench-target', inputSchema: z.any(), outputSchema: z.any() }).then(step).commit();
}

function cheapScorers() {
  const s1 = createScorer({ id: 'const-one', description: 'always 1' }).generateScore(() => 1);
  const s2 = createScorer({ id: 'parity', description: 'item parity' })
    .generateScore(({ run }) => (run.requestContext.get('i') % 2 === 0 ? 1 : 0.5));
  const s3 = createScorer({ id: 'len-ratio', description: 'output/input length' })
    .preprocess(({ run }) => ({ a: JSON.stringify(run.input).length, b: JSON.stringify(run.output).length }))
    .generateScore(({ results }) => Math.min(1, results.preprocessStepResult.b / results.preprocessStepResult.a));
  const g1 = createScorer({ id: 'gate-has-output', description: 'output present' })
    .generateScore(({ run }) => (Array.isArray(run.output) && run.output.length > 0 ? 1 : 0));
  const g2 = createScorer({ id: 'gate-const', description: 'always 1' }).generateScore(() => 1);
  return { scorers: [s1, { scorer: s2, threshold: 0.7 }, s3], gates: [g1, g2] };
}

const WORKLOADS = {
  cheap: () => ({
    texts: [(i) => sentence(i, 8), (i) => sentence(i + 3, 4)],
    config: cheapScorers,
  }),
  completeness: () => ({
    texts: [(i) => sentence(i, 30), (i) => sentence(i + 3, 15)],
    config: () => ({ scorers: [createCompletenessScorer()] }),
  }),
  faithfulness: (url) => ({
    texts: [(i) => `Question ${i}: what flows through Bern?`, (i) => `Answer ${i}: the Aare flows through Bern, the capital.`],
    config: () => ({
      scorers: [createFaithfulnessScorer({
        model: { id: 'openai/gpt-4o-mini', url, apiKey: 'sk-bench' },
        options: { context: CONTEXT },
      })],
    }),
  }),
};

const TEXT_SCORERS = {
  completeness: prebuilt.createCompletenessScorer,
  'content-similarity': prebuilt.createContentSimilarityScorer,
  'keyword-coverage': prebuilt.createKeywordCoverageScorer,
  'textual-difference': prebuilt.createTextualDifferenceScorer,
  tone: prebuilt.createToneScorer,
};

function textWorkload(scorer, file) {
  if (!TEXT_SCORERS[scorer]) throw new Error(`unknown text scorer ${scorer}`);
  const pairs = JSON.parse(require('node:fs').readFileSync(file, 'utf8'));
  return {
    texts: [(i) => pairs[i].input, (i) => pairs[i].output],
    config: () => ({ scorers: [TEXT_SCORERS[scorer]()] }),
    // The warm-up reads pairs from the end, so the measured run's pairs are new to it.
    warmUp: (n) => ({ texts: [(i) => pairs[pairs.length - 1 - i].input, (i) => pairs[pairs.length - 1 - i].output] }),
  };
}

async function measured(workload, n, concurrency) {
  const { data, outputs } = items(n, ...workload.texts);
  const config = workload.config();
  let scored = 0;
  let errors = 0;
  const itemScores = [];
  const onItemComplete = ({ item, scorerResults }) => {
    for (const r of Object.values(scorerResults)) {
      if (r && typeof r.score === 'number') scored += 1; else errors += 1;
      itemScores.push([item.requestContext.get('i'), r ? r.score : null]);
    }
  };
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  const result = await runEvals({ target: workflowTarget(outputs), data, concurrency, onItemComplete, ...config });
  const wall = (performance.now() - t0) / 1000;
  const used = process.cpuUsage(cpu);
  itemScores.sort((a, b) => a[0] - b[0]);
  return { wall, cpu: (used.user + used.system) / 1e6, result, scored, errors, itemScores: itemScores.map((s) => s[1]) };
}

async function main() {
  const [name, count, url, concurrencyText] = process.argv.slice(2);
  const text = name.startsWith('text:');
  if (!text && !WORKLOADS[name]) throw new Error(`unknown workload ${name}; use ${Object.keys(WORKLOADS).join(', ')} or text:SCORER`);
  const n = Number(count);
  const concurrency = Number(concurrencyText || 1);
  const workload = text ? textWorkload(name.slice(5), url) : WORKLOADS[name](url);
  // warm-up: JIT, module init
  await measured(text ? { ...workload, ...workload.warmUp() } : workload, Math.min(n, 50), concurrency);
  const run = await measured(workload, n, concurrency);
  const version = (pkg) => require(`${pkg}/package.json`).version;
  console.log(JSON.stringify({
    workload: name, items: n, concurrency,
    wall_s: run.wall, cpu_s: run.cpu, items_per_s: n / run.wall,
    scored: run.scored, errors: run.errors,
    scores: run.result.scores, verdict: run.result.verdict ?? null,
    ...(text ? { item_scores: run.itemScores } : {}),
    node: process.version, cpus: os.cpus().length,
    mastra: `@mastra/core ${version('@mastra/core')}, @mastra/evals ${version('@mastra/evals')}`,
  }));
}

main().catch((error) => { console.error(error); process.exit(1); });

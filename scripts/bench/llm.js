'use strict';
// bench llm: tokens/s and time to first token of the in-process GGUF model (RAG_LLM=local) on this machine, and
// the latency of `mode: agent` vs single-shot /v1/query on the same questions (embedded platform, same model).
const { existsSync, mkdirSync, writeFileSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const os = require('node:os');
const { dirname, join, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  model: { type: 'string', default: undefined, help: 'GGUF file (default: the fetched Gemma 3 270M Q4_K_M in the models dir, fetched when missing)' },
  'models-dir': { type: 'string', default: process.env.RAG_MODELS_DIR || join(c.root, '.models'), help: 'models folder (RAG_MODELS_DIR)' },
  threads: { type: 'intlist', default: [os.availableParallelism()], help: 'thread counts to measure (RAG_LLM_THREADS), each with its own context' },
  sources: { type: 'int', min: 0, default: 3, help: 'Cranfield passages in the RAG-shaped prompt (0: a one-line question)' },
  'max-tokens': { type: 'int', default: 64, help: 'completion tokens per request' },
  rounds: { type: 'int', default: 3, help: 'requests per thread count; the median is reported' },
  corpus: { type: 'string', default: 'cranfield', help: 'dataset folder in --eval-dir whose corpus.jsonl gives the passages' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder' },
  out: { type: 'string', default: join(c.root, 'docs', 'quality', 'llm-bench.json'), help: 'JSON results file (with --write)' },
  write: { type: 'bool', default: false, help: 'write --out' },
  'agent-questions': { type: 'int', min: 0, default: 3, help: 'Cranfield questions asked single-shot and with mode: agent (0: skip that section)' },
  'agent-docs': { type: 'int', default: 200, help: 'Cranfield documents ingested for the agent section' },
  'agent-steps': { type: 'int', default: 3, help: 'RAG_AGENT_MAX_STEPS of the agent section' },
  embedder: { type: 'string', default: 'hashing', help: 'RAG_EMBEDDER of the agent section (hashing: no model files; onnx: the default models)' },
  'max-seconds': { type: 'int', default: 1800, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- llm [options]

The in-process GGUF runtime (LocalLlm, node-llama-cpp) on this machine: load time, time to first token (prompt
evaluation + first token), decode tokens/s and prompt tokens/s for a RAG-shaped prompt (numbered sources + a question),
at each thread count; then two concurrent requests (queued on one sequence) to show the queue's cost. Every round
starts with a different first line, so no round reuses the previous one's KV cache. A BASE model by default: speed only,
never answer quality.

Then \`mode: agent\` vs single-shot: the embedded platform with RAG_LLM=local (the same model, the first --threads
value), --agent-docs Cranfield documents, and the first --agent-questions Cranfield questions, each asked both ways
in alternating order (ABBA): wall time of POST /v1/query, hops, LLM planning time, refusals. The agent's cost is its
planning calls (one LLM call per hop) plus the answer over the fused evidence.`;

function prompt(passages, question, round) {
  const sources = passages.map((p, i) => `<source id="${i + 1}">\n[${i + 1}] ${p.title || 'Untitled'}\n${p.text}\n</source>`).join('\n\n');
  return [
    { role: 'system', content: `Session ${round}. Answer only from the numbered sources and cite them as [n].` },
    { role: 'user', content: `${passages.length ? `Sources (${passages.length}):\n${sources}\n\n` : ''}Question: ${question}` },
  ];
}

async function timed(llm, messages, maxTokens) {
  const t0 = process.hrtime.bigint();
  let first;
  let usage;
  let pieces = 0;
  for await (const piece of llm.stream(messages, { maxTokens, temperature: 0, onUsage: (u) => (usage = u) })) {
    if (first === undefined && piece) first = process.hrtime.bigint();
    pieces++;
  }
  const end = process.hrtime.bigint();
  const ms = (a, b) => Number(b - a) / 1e6;
  const ttft = ms(t0, first ?? end);
  const decodeMs = ms(first ?? end, end);
  const completion = usage ? usage.completion_tokens : pieces;
  return {
    ttft_ms: ttft,
    total_ms: ms(t0, end),
    prompt_tokens: usage ? usage.prompt_tokens : 0,
    completion_tokens: completion,
    // The first token is part of the TTFT; decode speed is over the rest.
    decode_tok_s: completion > 1 && decodeMs > 0 ? ((completion - 1) * 1000) / decodeMs : 0,
    prompt_tok_s: usage && ttft > 0 ? (usage.prompt_tokens * 1000) / ttft : 0,
  };
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'llm');
  const started = new Date();
  const hw = c.hardware();
  const platform = c.requireDist('libs/platform/src/index.js');
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  const { LocalLlm, defaultLocalModelPath, DEFAULT_LOCAL_MODEL } = c.requireDist('libs/adapters/src/index.js');

  const modelsDir = resolve(opts.modelsDir);
  const modelPath = opts.model ? resolve(opts.model) : defaultLocalModelPath(modelsDir);
  if (!existsSync(modelPath)) {
    if (opts.model) throw new Error(`${modelPath}: no such file`);
    c.log(`fetching ${DEFAULT_LOCAL_MODEL.name} into ${modelsDir} …`);
    const r = spawnSync(process.execPath, [join(c.root, 'scripts/models/fetch.js'), DEFAULT_LOCAL_MODEL.name, '--dir', modelsDir], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error(`npm run models:fetch -- ${DEFAULT_LOCAL_MODEL.name} failed`);
  }
  const notes = [];
  let passages = [];
  if (opts.sources > 0) {
    const corpusFile = join(resolve(opts.evalDir), opts.corpus, 'corpus.jsonl');
    if (existsSync(corpusFile)) passages = c.readJsonl(corpusFile).slice(0, opts.sources).map((d) => ({ title: d.title, text: d.text }));
    else notes.push(`${corpusFile} missing: the prompt has no sources`);
  }
  const question = 'What is the effect of sweep on the boundary layer of a wing?';

  const results = [];
  for (const threads of opts.threads) {
    c.log(`loading ${modelPath} with ${threads} thread(s) …`);
    const t0 = Date.now();
    const llm = await LocalLlm.create({ modelPath, threads, contextSize: 4096, sequences: 1, timeoutMs: 600_000, maxTokens: opts.maxTokens });
    const loadS = (Date.now() - t0) / 1000;
    try {
      await timed(llm, prompt(passages, question, 'warm-up'), 4); // first evaluation allocates buffers
      const rounds = [];
      for (let r = 0; r < opts.rounds; r++) {
        const m = await timed(llm, prompt(passages, question, `${threads}-${r}`), opts.maxTokens);
        c.log(`${threads} thread(s), round ${r + 1}/${opts.rounds}: TTFT ${m.ttft_ms.toFixed(0)} ms, ${m.decode_tok_s.toFixed(1)} tok/s decode, ${m.prompt_tokens} prompt tokens`);
        rounds.push(m);
      }
      // Two at once on one sequence: the second waits for the first (queued, not interleaved).
      const tc = process.hrtime.bigint();
      const pair = await Promise.all([timed(llm, prompt(passages, question, `${threads}-a`), opts.maxTokens), timed(llm, prompt(passages, question, `${threads}-b`), opts.maxTokens)]);
      const pairMs = Number(process.hrtime.bigint() - tc) / 1e6;
      const med = (k) => c.median(rounds.map((x) => x[k]));
      results.push({
        threads,
        load_s: Number(loadS.toFixed(2)),
        prompt_tokens: Math.round(med('prompt_tokens')),
        completion_tokens: Math.round(med('completion_tokens')),
        ttft_ms: Number(med('ttft_ms').toFixed(0)),
        decode_tok_s: Number(med('decode_tok_s').toFixed(1)),
        prompt_tok_s: Number(med('prompt_tok_s').toFixed(0)),
        total_ms: Number(med('total_ms').toFixed(0)),
        two_concurrent_ms: Number(pairMs.toFixed(0)),
        second_of_two_ttft_ms: Number(Math.max(pair[0].ttft_ms, pair[1].ttft_ms).toFixed(0)),
      });
    } finally {
      await llm.close();
    }
  }
  const agent = opts.agentQuestions > 0 ? await agentSection(opts, modelPath, notes) : undefined;
  stopWatchdog();
  const file = {
    generated_at: started.toISOString(),
    bench: 'llm',
    command: `npm run bench -- llm ${argv.join(' ')}`.trim(),
    model: modelPath.startsWith(c.root + '/') ? modelPath.slice(c.root.length + 1) : modelPath,
    sources: passages.length,
    max_tokens: opts.maxTokens,
    rounds: opts.rounds,
    statistic: 'median of rounds',
    nproc: hw.nproc,
    cpu: hw.cpu,
    results,
    ...(agent ? { agent } : {}),
  };
  if (opts.write) {
    mkdirSync(dirname(resolve(opts.out)), { recursive: true });
    writeFileSync(resolve(opts.out), JSON.stringify(file, null, 2) + '\n');
    notes.push(`results written to ${resolve(opts.out)}`);
  }
  notes.push('TTFT = request to first streamed text (prompt evaluation + first token); decode tok/s over the tokens after the first; prompt tok/s = prompt tokens / TTFT.');
  notes.push('"2 at once" = wall time of two concurrent requests on one sequence (RAG_LLM_SEQUENCES=1): about twice one request, the second waiting its turn.');
  c.report({
    bench: 'llm',
    hw,
    started,
    sections: [
      {
        title: `local LLM (${file.model}; ${passages.length} source(s), ${opts.maxTokens} max tokens)`,
        head: ['threads', 'load s', 'prompt tok', 'TTFT ms', 'prompt tok/s', 'decode tok/s', 'completion tok', 'request ms', '2 at once ms', '2nd TTFT ms'],
        rows: results.map((r) => [r.threads, r.load_s.toFixed(1), r.prompt_tokens, r.ttft_ms, r.prompt_tok_s, r.decode_tok_s.toFixed(1), r.completion_tokens, r.total_ms, r.two_concurrent_ms, r.second_of_two_ttft_ms]),
      },
      ...(agent
        ? [
            {
              title: `mode: agent vs single-shot (/v1/query, ${agent.documents} Cranfield docs, embedder ${agent.embedder}, ${agent.threads} thread(s), RAG_AGENT_MAX_STEPS=${agent.max_steps})`,
              head: ['question', 'single ms', 'agent ms', 'agent/single', 'hops', 'plan ms', 'single refused', 'agent refused', 'agent degraded'],
              rows: [
                ...agent.questions.map((q) => [q.id, q.single_ms, q.agent_ms, (q.agent_ms / q.single_ms).toFixed(2), q.hops, q.plan_ms, q.single_refused, q.agent_refused, q.agent_degraded.join(',') || '-']),
                ['median', agent.single_ms_median, agent.agent_ms_median, agent.ratio_median.toFixed(2), agent.hops_mean.toFixed(1), '', '', '', ''],
              ],
            },
          ]
        : []),
    ],
    notes,
    json: file,
  });
}

/** `mode: agent` vs single-shot on the same questions through the embedded platform with the local model. */
async function agentSection(opts, modelPath, notes) {
  const p = require('./lib/platform');
  const services = c.requireDist('libs/services/src/index.js');
  const threads = opts.threads[0];
  const { corpus, queries } = c.readCranfield(resolve(opts.evalDir));
  const dataDir = p.tempDataDir('llm-agent');
  const cfg = p.embeddedConfig({
    dataDir,
    overrides: {
      RAG_LLM: 'local',
      RAG_LLM_MODEL_PATH: modelPath,
      RAG_LLM_THREADS: threads,
      RAG_LLM_CONTEXT_SIZE: 8192,
      RAG_LLM_MAX_TOKENS: opts.maxTokens,
      RAG_LLM_TIMEOUT_MS: 600_000,
      RAG_EMBEDDER: opts.embedder,
      RAG_AGENT_MAX_STEPS: opts.agentSteps,
      RAG_QUERY_EXPANSION: 'none',
      RAG_MODELS_DIR: resolve(opts.modelsDir),
    },
  });
  c.log(`agent section: starting the embedded platform (embedder ${cfg.RAG_EMBEDDER}, local LLM ${threads} thread(s)) …`);
  const server = await services.startEmbeddedServer(cfg);
  try {
    await p.ingestAndWait(p.inProcessClient(server), p.cranfieldDocs(corpus.slice(0, opts.agentDocs), 'bench-agent:'), { label: 'agent section ingest' });
    const ask = async (question, mode) => {
      const t0 = process.hrtime.bigint();
      const r = await c.httpJson('POST', `${server.url}/v1/query`, { question, mode }, { timeoutMs: 900_000 });
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      if (!r.ok) throw new Error(`POST /v1/query (${mode}) answered ${r.status}: ${r.text.slice(0, 300)}`);
      return { ms, body: r.json };
    };
    await ask('warm-up: what is a boundary layer', 'hybrid'); // loads the embedder/grammar paths once
    const out = [];
    const qs = queries.slice(0, opts.agentQuestions);
    for (let i = 0; i < qs.length; i++) {
      const q = qs[i];
      // ABBA: alternate which mode goes first, so neither always gets the warmer caches.
      const order = i % 2 === 0 ? ['hybrid', 'agent'] : ['agent', 'hybrid'];
      const got = {};
      for (const m of order) got[m] = await ask(q.text, m);
      const t = got.agent.body.timings_ms;
      const row = {
        id: q._id,
        single_ms: Math.round(got.hybrid.ms),
        agent_ms: Math.round(got.agent.ms),
        hops: Object.keys(t).filter((k) => /^agent_hop\d+$/.test(k)).length,
        plan_ms: Math.round(t.agent_plan ?? 0),
        single_refused: got.hybrid.body.refused,
        agent_refused: got.agent.body.refused,
        agent_degraded: got.agent.body.degraded,
      };
      c.log(`question ${q._id}: single ${row.single_ms} ms, agent ${row.agent_ms} ms (${row.hops} hop(s), planning ${row.plan_ms} ms)`);
      out.push(row);
    }
    notes.push('agent vs single-shot: wall time of POST /v1/query on this machine; the agent pays one LLM planning call per hop plus the answer over the fused evidence. A BASE model plans: hop counts say what the loop did, not what a good planner would do.');
    return {
      embedder: cfg.RAG_EMBEDDER,
      threads,
      documents: Math.min(opts.agentDocs, corpus.length),
      max_steps: opts.agentSteps,
      questions: out,
      single_ms_median: Math.round(c.median(out.map((r) => r.single_ms))),
      agent_ms_median: Math.round(c.median(out.map((r) => r.agent_ms))),
      ratio_median: c.median(out.map((r) => r.agent_ms / r.single_ms)),
      hops_mean: out.reduce((s, r) => s + r.hops, 0) / Math.max(1, out.length),
    };
  } finally {
    await server.close();
    p.removeDir(dataDir);
  }
}

module.exports = { run, HELP };

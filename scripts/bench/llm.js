'use strict';
// bench llm: tokens/s and time to first token of the in-process GGUF model (RAG_LLM=local) on this machine.
const { existsSync, mkdirSync, writeFileSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const os = require('node:os');
const { dirname, join, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  model: { type: 'string', default: undefined, help: 'GGUF file (default: the fetched Gemma 3 270M Q4_K_M in the models dir, fetched when missing)' },
  'models-dir': { type: 'string', default: process.env.RAG_MODELS_DIR || join(c.root, '.models'), help: 'models folder (RAG_MODELS_DIR)' },
  threads: { type: 'intlist', default: [os.availableParallelism()], help: 'thread counts to measure (RAG_LLM_THREADS), each with its own context' },
  sources: { type: 'int', default: 3, help: 'Cranfield passages in the RAG-shaped prompt (0: a one-line question)' },
  'max-tokens': { type: 'int', default: 64, help: 'completion tokens per request' },
  rounds: { type: 'int', default: 3, help: 'requests per thread count; the median is reported' },
  corpus: { type: 'string', default: 'cranfield', help: 'dataset folder in --eval-dir whose corpus.jsonl gives the passages' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder' },
  out: { type: 'string', default: join(c.root, 'docs', 'quality', 'llm-bench.json'), help: 'JSON results file (with --write)' },
  write: { type: 'bool', default: false, help: 'write --out' },
  'max-seconds': { type: 'int', default: 1200, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- llm [options]

The in-process GGUF runtime (LocalLlm, node-llama-cpp) on this machine: load time, time to first token (prompt
evaluation + first token), decode tokens/s and prompt tokens/s for a RAG-shaped prompt (numbered sources + a question),
at each thread count; then two concurrent requests (queued on one sequence) to show the queue's cost. Every round
starts with a different first line, so no round reuses the previous one's KV cache. A BASE model by default: speed only,
never answer quality. \`mode: agent\` vs single-shot latency is reported by this bench once the agent exists (issue 16
item 3); until then only single-shot generation is measured.`;

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
  };
  if (opts.write) {
    mkdirSync(dirname(resolve(opts.out)), { recursive: true });
    writeFileSync(resolve(opts.out), JSON.stringify(file, null, 2) + '\n');
    notes.push(`results written to ${resolve(opts.out)}`);
  }
  notes.push('TTFT = request to first streamed text (prompt evaluation + first token); decode tok/s over the tokens after the first; prompt tok/s = prompt tokens / TTFT.');
  notes.push('"2 at once" = wall time of two concurrent requests on one sequence (RAG_LLM_SEQUENCES=1): about twice one request, the second waiting its turn.');
  notes.push('mode: agent vs single-shot: not measured — the agent loop (issue 16 item 3) is not built yet.');
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
    ],
    notes,
    json: file,
  });
}

module.exports = { run, HELP };

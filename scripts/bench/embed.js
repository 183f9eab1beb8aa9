'use strict';
// bench embed: chunks/second of the embedders at several batch sizes on real passages, interleaved rounds.
const { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');
const c = require('./lib/common');

const spec = {
  n: { type: 'int', default: 128, help: 'passages: the first N texts of the corpus' },
  batch: { type: 'intlist', default: [1, 8, 32], help: 'batch sizes (texts per embed call = per ONNX run)' },
  rounds: { type: 'int', default: 3, help: 'interleaved rounds (A B A B …); the median round is reported' },
  models: { type: 'list', default: undefined, help: 'ONNX model folders in the models dir (default: every embedding model there)' },
  'models-dir': { type: 'string', default: process.env.RAG_MODELS_DIR || join(c.root, '.models'), help: 'models folder (RAG_MODELS_DIR)' },
  hashing: { type: 'bool', default: true, help: 'include the HashingEmbedder (--no-hashing to leave it out)' },
  default: { type: 'bool', default: true, help: 'include the default RAG_EMBEDDING_MODEL when it routes two models (--no-default to leave it out)' },
  corpus: { type: 'string', default: 'cranfield', help: 'dataset folder in --eval-dir whose corpus.jsonl gives the passages' },
  'eval-dir': { type: 'string', default: c.defaultEvalDir, help: 'evaluation data folder' },
  threads: { type: 'int', default: undefined, help: 'ONNX Runtime intra-op threads (default: its own choice)' },
  out: { type: 'string', default: join(c.root, 'docs', 'quality', 'embed-bench.json'), help: 'JSON results file read by the quality report' },
  write: { type: 'bool', default: true, help: 'write --out (--no-write to only print)' },
  'max-seconds': { type: 'int', default: 1800, help: 'hard limit for the whole run' },
};

const HELP = `usage: npm run bench -- embed [options]

Chunks/second of HashingEmbedder and OnnxEmbedder (each embedding model folder in .models/, or --models) embedding
the first N passages of a corpus, at each batch size. Every embedder and batch size runs once per round, rounds
interleaved (A B C A B C …), so ratios between them are measured side by side. Writes docs/quality/embed-bench.json.`;

function embeddingModels(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((d) => {
      const f = join(dir, d, 'rag-model.json');
      if (!existsSync(f)) return false;
      try {
        return JSON.parse(readFileSync(f, 'utf8')).kind === 'embedding';
      } catch {
        return false;
      }
    })
    .sort();
}

async function run(argv) {
  const opts = c.parseArgs(argv, spec);
  if (opts.help) return process.stdout.write(c.usage(HELP, spec));
  const stopWatchdog = c.watchdog(opts.maxSeconds, 'embed');
  const started = new Date();
  const hw = c.hardware();
  const platform = c.requireDist('libs/platform/src/index.js');
  if (!process.env.RAG_LOG_LEVEL) platform.setLogLevel('warn');
  const { HashingEmbedder, OnnxEmbedder, ScriptRoutedEmbedder, onnxModelNames } = c.requireDist('libs/adapters/src/index.js');

  const corpusFile = join(resolve(opts.evalDir), opts.corpus, 'corpus.jsonl');
  if (!existsSync(corpusFile)) throw new Error(`${corpusFile} is missing (set --eval-dir / --corpus)`);
  const texts = c
    .readJsonl(corpusFile)
    .slice(0, opts.n)
    .map((d) => d.text)
    .filter((t) => typeof t === 'string' && t.trim());
  if (texts.length < opts.n) c.log(`only ${texts.length} passages in ${corpusFile}`);
  const meanChars = texts.reduce((a, t) => a + t.length, 0) / texts.length;
  const modelsDir = resolve(opts.modelsDir);
  const available = embeddingModels(modelsDir);
  const wanted = opts.models ?? available;
  const missing = wanted.filter((m) => !available.includes(m));
  const notes = [];
  if (missing.length) notes.push(`not measured, no embedding model folder in ${relative(c.root, modelsDir) || modelsDir}: ${missing.join(', ')} (fetch with npm run models:fetch -- <name>)`);
  const maxBatch = Math.max(...opts.batch);

  const embedders = [];
  if (opts.hashing) embedders.push({ label: 'hashing', embedder: new HashingEmbedder(), load_s: 0 });
  for (const name of wanted.filter((m) => available.includes(m))) {
    c.log(`loading ${name} …`);
    const t0 = Date.now();
    try {
      const e = await OnnxEmbedder.create({ modelsDir, name, batchSize: maxBatch, ...(opts.threads ? { threads: opts.threads } : {}) });
      embedders.push({ label: name, embedder: e, load_s: (Date.now() - t0) / 1000 });
    } catch (err) {
      notes.push(`${name}: could not load (${err.message})`);
      c.log(`  ${name}: ${err.message}`);
    }
  }
  // The default configuration: two models routed by script (passages run through both, so ≈ the sum of their times).
  const defaultModel = platform.loadConfig({}).RAG_EMBEDDING_MODEL;
  const pair = onnxModelNames(defaultModel);
  if (opts.default && pair.length === 2) {
    if (pair.every((m) => available.includes(m))) {
      c.log(`loading the default ${defaultModel} …`);
      const t0 = Date.now();
      const [a, b] = await Promise.all(pair.map((name) => OnnxEmbedder.create({ modelsDir, name, batchSize: maxBatch, ...(opts.threads ? { threads: opts.threads } : {}) })));
      embedders.push({ label: `default (${defaultModel})`, embedder: new ScriptRoutedEmbedder(a, b), load_s: (Date.now() - t0) / 1000 });
    } else notes.push(`default ${defaultModel} not measured: fetch it with npm run models:fetch -- ${pair.join(' ')}`);
  }
  if (!embedders.length) throw new Error('no embedder to measure');
  // Warm-up: one call per embedder and batch size (first runs allocate and JIT).
  for (const e of embedders) for (const b of opts.batch) await e.embedder.embed(texts.slice(0, b), 'passage');

  const samples = new Map(); // `${label}|${batch}` → chunks/s per round
  for (let r = 0; r < opts.rounds; r++) {
    for (const e of embedders) {
      for (const b of opts.batch) {
        const t0 = process.hrtime.bigint();
        for (let s = 0; s < texts.length; s += b) await e.embedder.embed(texts.slice(s, s + b), 'passage');
        const secs = Number(process.hrtime.bigint() - t0) / 1e9;
        const cps = texts.length / secs;
        const key = `${e.label}|${b}`;
        if (!samples.has(key)) samples.set(key, []);
        samples.get(key).push(cps);
        c.log(`round ${r + 1}/${opts.rounds} ${e.label} batch ${b}: ${cps.toFixed(1)} chunks/s`);
      }
    }
  }
  for (const e of embedders) await e.embedder.close?.();
  stopWatchdog();

  const ref = embedders.find((e) => e.label !== 'hashing') ?? embedders[0];
  const results = [];
  for (const e of embedders) {
    for (const b of opts.batch) {
      const xs = samples.get(`${e.label}|${b}`);
      const med = c.median(xs);
      const bs1 = c.median(samples.get(`${e.label}|${opts.batch[0]}`));
      const refMed = c.median(samples.get(`${ref.label}|${b}`));
      results.push({
        embedder: e.label,
        model_id: e.embedder.modelId,
        dim: e.embedder.dim,
        batch_size: b,
        chunks_per_s: Number(med.toFixed(2)),
        ms_per_chunk: Number((1000 / med).toFixed(3)),
        min_chunks_per_s: Number(Math.min(...xs).toFixed(2)),
        max_chunks_per_s: Number(Math.max(...xs).toFixed(2)),
        [`x_vs_batch_${opts.batch[0]}`]: Number((med / bs1).toFixed(2)),
        [`x_vs_${ref.label}`]: Number((med / refMed).toFixed(2)),
        load_s: Number(e.load_s.toFixed(2)),
      });
    }
  }
  const file = {
    generated_at: started.toISOString(),
    bench: 'embed',
    command: `npm run bench -- embed ${argv.join(' ')}`.trim(),
    corpus: opts.corpus,
    passages: texts.length,
    mean_chars_per_passage: Number(meanChars.toFixed(0)),
    rounds: opts.rounds,
    statistic: 'median of rounds',
    nproc: hw.nproc,
    cpu: hw.cpu,
    node: hw.node,
    onnx_threads: opts.threads ?? 'default',
    results,
  };
  if (opts.write) {
    mkdirSync(dirname(resolve(opts.out)), { recursive: true });
    writeFileSync(resolve(opts.out), JSON.stringify(file, null, 2) + '\n');
    c.log(`wrote ${resolve(opts.out)}`);
  }
  notes.push(`${texts.length} ${opts.corpus} passages (mean ${meanChars.toFixed(0)} chars), embedded as 'passage'; chunks/s = median of ${opts.rounds} interleaved round(s) (min–max shown); every model runs on these English passages, including bge-small-zh.`);
  notes.push(`batch size = texts per embed() call = texts per ONNX run (each OnnxEmbedder created with batchSize ${maxBatch}); ratios "x vs" are within this run.`);
  notes.push(`passages range from ${Math.min(...texts.map((t) => t.length))} to ${Math.max(...texts.map((t) => t.length))} chars: a batch is padded to its longest text (up to the model's max length), so unequal passages make larger batches pay for padding; chunks cut by the chunker are closer in length.`);
  if (opts.write) notes.push(`results written to ${resolve(opts.out).startsWith(c.root + '/') ? relative(c.root, resolve(opts.out)) : resolve(opts.out)}`);
  c.report({
    bench: 'embed',
    hw,
    started,
    sections: [
      {
        title: `embedding throughput (chunks/s, ${texts.length} passages)`,
        head: ['embedder', 'dim', 'batch', 'chunks/s', 'min–max', 'ms/chunk', `x vs batch ${opts.batch[0]}`, `x vs ${ref.label}`, 'load s'],
        rows: results.map((r) => [
          r.embedder,
          r.dim,
          r.batch_size,
          r.chunks_per_s.toFixed(1),
          `${r.min_chunks_per_s.toFixed(1)}–${r.max_chunks_per_s.toFixed(1)}`,
          r.ms_per_chunk.toFixed(2),
          `${r[`x_vs_batch_${opts.batch[0]}`].toFixed(2)}x`,
          `${r[`x_vs_${ref.label}`].toFixed(2)}x`,
          r.load_s.toFixed(1),
        ]),
      },
    ],
    notes,
    json: { ...file, written_to: opts.write ? resolve(opts.out) : null },
  });
}

module.exports = { run, HELP };

#!/usr/bin/env node
'use strict';
// Threshold sweep for the relevance gate (shouldRefuse in libs/domain/src/generation/evidence.ts), on whole dev sets.
//
//   node scripts/report/refusal-sweep.js [--datasets cranfield,cmrc2018-trial] [--mode hybrid]
//        [--thresholds 0.3:0.7:0.05] [--eval-dir ../shared/eval] [--json FILE]
//
// For every in-domain judged query and every out-of-domain question (test/fixtures/ood/<dataset>.jsonl) it runs
// the real retrieval of the answer path (the same QueryOrchestrator.retrieve call that `ask` makes, default
// configuration from the environment) and computes the gate's evidence exactly as the generator does: the best
// evidenceScore(normalizeQuery(question), parent_text ?? text) over the top RAG_TOP_K sources. A question is
// refused at threshold t when evidence < t (or when there are no sources). One retrieval per question, then the
// whole sweep is arithmetic, so the rates per threshold are exactly what `rag eval` would report with
// RAG_REFUSAL_THRESHOLD=t. It also reports alternative rules (see RULES below) on the same retrievals.
//
// The corpus is ingested first by `node bin/rag.js eval … --limit 1 --no-answers --no-ood` (idempotent), into the
// same data folder `rag eval` uses: $RAG_DATA_DIR/eval/<dataset>. Needs `npm run build`. Progress on stderr,
// Markdown tables on stdout. Never tune on single questions: only whole-set rates are printed.
require('reflect-metadata');
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { basename, join, resolve } = require('node:path');

const root = join(__dirname, '..', '..');
const dist = (lib) => join(root, 'dist', 'libs', lib, 'src', 'index.js');
if (!existsSync(dist('services'))) {
  console.error('refusal-sweep: dist/ is missing; run `npm run build` first');
  process.exit(1);
}
const { loadConfig, setLogLevel } = require(dist('platform'));
const { createEmbeddedContext, lockDataDir } = require(dist('services'));
const { evidenceScore, normalizeQuery, parseQrels } = require(dist('domain'));

function args(argv) {
  const out = { datasets: ['cranfield', 'cmrc2018-trial'], mode: 'hybrid', thresholds: '0.30:0.70:0.05', evalDir: join(root, '..', 'shared', 'eval'), json: '' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--datasets') out.datasets = next().split(',').filter(Boolean);
    else if (a === '--mode') out.mode = next();
    else if (a === '--thresholds') out.thresholds = next();
    else if (a === '--eval-dir') out.evalDir = resolve(next());
    else if (a === '--json') out.json = resolve(next());
    else if (a === '--help' || a === '-h') {
      console.log(readFileSync(__filename, 'utf8').split('\n').slice(2, 18).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (!['hybrid', 'dense', 'keyword'].includes(out.mode)) throw new Error('--mode must be hybrid, dense or keyword');
  return out;
}

function thresholdList(spec) {
  const [from, to, step] = spec.split(':').map(Number);
  if (![from, to, step].every(Number.isFinite) || step <= 0 || to < from) throw new Error('--thresholds wants from:to:step');
  const out = [];
  for (let t = from; t <= to + 1e-9; t += step) out.push(Math.round(t * 1000) / 1000);
  return out;
}

const readJsonl = (file) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

function judgedQueries(dir) {
  const qrelFiles = readdirSync(join(dir, 'qrels')).filter((f) => f.endsWith('.tsv'));
  const file = ['test.tsv', 'dev.tsv', 'train.tsv'].find((f) => qrelFiles.includes(f)) ?? qrelFiles[0];
  const qrels = parseQrels(readFileSync(join(dir, 'qrels', file), 'utf8'));
  return readJsonl(join(dir, 'queries.jsonl')).filter((q) => qrels.has(q._id));
}

/** Per question: the evidence features of the answer path's sources (top RAG_TOP_K) and of a wider top 10. */
async function features(query, question, topK, mode) {
  const r = await query.retrieve({ question, mode }, { tenant: 'default' });
  const q = normalizeQuery(question);
  const ev = r.chunks.map((c) => evidenceScore(q, c.parent_text ?? c.text));
  const gate = ev.slice(0, topK);
  return { n: gate.length, evidence: gate.length ? Math.max(...gate) : 0, top1: ev[0] ?? 0, mean2: gate.length ? (gate.slice().sort((a, b) => b - a).slice(0, 2).reduce((s, x) => s + x, 0) / Math.min(2, gate.length)) : 0 };
}

/** Refusal rules compared on the same retrievals; `gate` is today's rule (evidence over the answer's sources < t). */
const RULES = {
  gate: (f, t) => f.n === 0 || f.evidence < t,
  top1: (f, t) => f.n === 0 || f.top1 < t,
  mean2: (f, t) => f.n === 0 || f.mean2 < t,
};

async function measure(name, dir, mode) {
  const progress = (msg) => process.stderr.write(`refusal-sweep ${name}: ${msg}\n`);
  const oodFile = join(root, 'test', 'fixtures', 'ood', `${name}.jsonl`);
  if (!existsSync(oodFile)) throw new Error(`no OOD set ${oodFile}`);
  progress('ingesting (rag eval --limit 1 --no-answers --no-ood)');
  const ing = spawnSync(process.execPath, [join(root, 'bin', 'rag.js'), 'eval', '--dataset', dir, '--mode', 'keyword', '--limit', '1', '--no-answers', '--no-ood'], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (ing.status !== 0) throw new Error(`ingest of ${name} failed`);
  const base = loadConfig(process.env);
  const cfg = loadConfig(process.env, { RAG_DATA_DIR: join(base.dataDir, 'eval', basename(dir)), RAG_CANDIDATES: Math.max(base.RAG_CANDIDATES, 100) });
  const unlock = lockDataDir(cfg.dataDir);
  const h = await createEmbeddedContext(cfg);
  try {
    const run = async (label, qs) => {
      const out = [];
      for (const [i, q] of qs.entries()) {
        out.push({ id: q._id, lang: q.lang, ...(await features(h.query, q.text, cfg.RAG_TOP_K, mode)) });
        if ((i + 1) % 200 === 0 || i + 1 === qs.length) progress(`${label} ${i + 1}/${qs.length}`);
      }
      return out;
    };
    const inDomain = await run('in-domain', judgedQueries(dir));
    const ood = await run('ood', readJsonl(oodFile));
    return { dataset: name, mode, embedder: cfg.RAG_EMBEDDER === 'onnx' ? cfg.RAG_EMBEDDING_MODEL : cfg.RAG_EMBEDDER, top_k: cfg.RAG_TOP_K, inDomain, ood };
  } finally {
    await h.close();
    unlock();
  }
}

const pct = (x) => (x === null ? '–' : `${(x * 100).toFixed(1)}%`);
const rate = (xs, rule, t) => (xs.length ? xs.filter((f) => RULES[rule](f, t)).length / xs.length : null);

function table(m, rule, thresholds) {
  const lines = [
    `| threshold | in-domain refused (n=${m.inDomain.length}) | OOD refused (n=${m.ood.length}) | OOD en | OOD zh | goal met |`,
    '|---:|---:|---:|---:|---:|:---:|',
  ];
  for (const t of thresholds) {
    const inD = rate(m.inDomain, rule, t);
    const o = rate(m.ood, rule, t);
    const ok = inD <= 0.1 && o >= 0.9;
    lines.push(
      `| ${t.toFixed(2)} | ${pct(inD)} | ${pct(o)} | ${pct(rate(m.ood.filter((f) => f.lang === 'en'), rule, t))} | ${pct(rate(m.ood.filter((f) => f.lang === 'zh'), rule, t))} | ${ok ? 'yes' : ''} |`,
    );
  }
  return lines.join('\n');
}

async function main() {
  const opts = args(process.argv.slice(2));
  setLogLevel('warn');
  const thresholds = thresholdList(opts.thresholds);
  const results = [];
  for (const name of opts.datasets) results.push(await measure(name, join(opts.evalDir, name), opts.mode));
  const out = [];
  for (const rule of Object.keys(RULES)) {
    out.push(`## rule \`${rule}\`\n`);
    for (const m of results) out.push(`### ${m.dataset} · ${m.mode} · ${m.embedder} · top_k ${m.top_k}\n\n${table(m, rule, thresholds)}\n`);
    if (results.length > 1) {
      out.push(`### both datasets: thresholds meeting the goal on each (in-domain ≤ 10 %, OOD ≥ 90 %)\n`);
      const ok = thresholds.filter((t) => results.every((m) => rate(m.inDomain, rule, t) <= 0.1 && rate(m.ood, rule, t) >= 0.9));
      out.push(ok.length ? ok.map((t) => t.toFixed(2)).join(', ') + '\n' : 'none\n');
    }
  }
  process.stdout.write(out.join('\n'));
  if (opts.json) writeFileSync(opts.json, JSON.stringify(results) + '\n');
}

main().catch((e) => {
  console.error(`refusal-sweep: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});

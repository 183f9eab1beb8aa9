#!/usr/bin/env node
'use strict';
// Converts a classic SMART-format IR test collection (CISI, CACM, MED, CRAN …: `<NAME>.ALL` documents, `<NAME>.QRY`
// queries, `<NAME>.REL` judgments, records introduced by `.I <id>` and fields by `.T` title, `.A` author, `.W` text,
// `.B`/`.X`/`.K` other) into the BEIR layout `rag eval` reads: corpus.jsonl, queries.jsonl, qrels/test.tsv.
//
//   node scripts/report/smart-to-beir.js <NAME.ALL> <NAME.QRY> <NAME.REL> <out dir>
//
// Only queries with at least one judgment are written. Every judged pair gets relevance 1 (SMART .REL files carry
// no grades; a pair listed twice is written once).
const { mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

/** Splits SMART records: [{ id, fields: { T, A, W, ... } }], field text with runs of whitespace collapsed. */
function parseSmart(text) {
  const out = [];
  let cur = null;
  let field = null;
  for (const line of text.split(/\r?\n/)) {
    const rec = /^\.I\s+(\d+)/.exec(line);
    if (rec) {
      cur = { id: String(Number(rec[1])), fields: {} };
      out.push(cur);
      field = null;
      continue;
    }
    const f = /^\.([A-Z])\s*(.*)$/.exec(line);
    if (f && cur) {
      field = f[1];
      cur.fields[field] = (cur.fields[field] ?? '') + (f[2] ? f[2] + ' ' : '');
      continue;
    }
    if (cur && field) cur.fields[field] += line + ' ';
  }
  for (const r of out) for (const k of Object.keys(r.fields)) r.fields[k] = r.fields[k].replace(/\s+/g, ' ').trim();
  return out;
}

function main() {
  const [all, qry, rel, outDir] = process.argv.slice(2);
  if (!outDir) {
    process.stderr.write('usage: smart-to-beir.js <NAME.ALL> <NAME.QRY> <NAME.REL> <out dir>\n');
    process.exit(2);
  }
  const docs = parseSmart(readFileSync(all, 'utf8'));
  const queries = parseSmart(readFileSync(qry, 'utf8'));
  const judged = new Map();
  for (const line of readFileSync(rel, 'utf8').split(/\r?\n/)) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 2 || !/^\d+$/.test(parts[0]) || !/^\d+$/.test(parts[1])) continue;
    const q = String(Number(parts[0]));
    if (!judged.has(q)) judged.set(q, new Set());
    judged.get(q).add(String(Number(parts[1])));
  }
  mkdirSync(join(outDir, 'qrels'), { recursive: true });
  const corpus = docs
    .filter((d) => d.fields.W || d.fields.T)
    // A record with a title only (half of CACM's) keeps its title as its text: the platform refuses a blank text.
    .map((d) => JSON.stringify({ _id: d.id, title: d.fields.T ?? '', text: d.fields.W ?? d.fields.T }));
  writeFileSync(join(outDir, 'corpus.jsonl'), corpus.join('\n') + '\n');
  const qs = queries.filter((q) => judged.has(q.id) && q.fields.W).map((q) => JSON.stringify({ _id: q.id, text: q.fields.W }));
  writeFileSync(join(outDir, 'queries.jsonl'), qs.join('\n') + '\n');
  const qrels = ['query-id\tcorpus-id\tscore'];
  for (const [q, ds] of judged) for (const d of ds) qrels.push(`${q}\t${d}\t1`);
  writeFileSync(join(outDir, 'qrels', 'test.tsv'), qrels.join('\n') + '\n');
  process.stderr.write(`${corpus.length} documents, ${qs.length} judged queries, ${qrels.length - 1} judgments → ${outDir}\n`);
}

main();

'use strict';
// Builds the two-hop evaluation set (issue 16 item 7) from the CMRC 2018 trial set (BEIR layout, zh):
//   node scripts/eval/multihop-build.js [--from ../shared/eval/cmrc2018-trial] [--out test/fixtures/multihop/cmrc2018-2hop]
// A bridge is a pair of passages (A, B) where A's text names B's title (B has its own passage). Each CMRC question
// judged on B becomes a two-hop question that names A and refers to B only through A: B's title, where the question
// says it, is replaced by 该对象 ("that subject"), so the second passage is identified by reading the first. qrels list
// both hops (A and B, grade 1). Deterministic: the same input always gives the same set.
const { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } = require('node:fs');
const { join, resolve } = require('node:path');

const root = resolve(__dirname, '..', '..');
const arg = (name, def) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : def;
};
const from = resolve(arg('from', join(root, '..', 'shared', 'eval', 'cmrc2018-trial')));
const out = resolve(arg('out', join(root, 'test', 'fixtures', 'multihop', 'cmrc2018-2hop')));
const readJsonl = (f) =>
  readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));

for (const f of ['corpus.jsonl', 'queries.jsonl', 'qrels/test.tsv']) if (!existsSync(join(from, f))) throw new Error(`${from}: ${f} is missing`);
const docs = readJsonl(join(from, 'corpus.jsonl'));
const queries = new Map(readJsonl(join(from, 'queries.jsonl')).map((q) => [q._id, q]));
const judgedOn = new Map(); // doc id -> query ids, in file order
for (const line of readFileSync(join(from, 'qrels', 'test.tsv'), 'utf8').split('\n').slice(1)) {
  const [qid, did, grade] = line.trim().split('\t');
  if (!qid || Number(grade) <= 0) continue;
  if (!judgedOn.has(did)) judgedOn.set(did, []);
  judgedOn.get(did).push(qid);
}

/**
 * A mentions B: B's title occurs in A's text outside A's own title. Titles of two characters or fewer are skipped:
 * in this corpus every such hit but one is a substring of another word ("于海" in 生长于海拔 "grows at an altitude
 * of", "黄蝉" in 小黄蝉/重瓣黄蝉, aliases of the passage's own plant); the one lost is 东辽国 → 后辽.
 */
function mentions(a, b) {
  const title = b.title.trim();
  if (Array.from(title).length <= 2) return false;
  const text = a.text.split(a.title).join('\u0000');
  return text.includes(title);
}

const bridges = [];
for (const a of docs) for (const b of docs) if (a._id !== b._id && mentions(a, b) && judgedOn.has(b._id)) bridges.push([a, b]);

const rows = [];
for (const [a, b] of bridges) {
  for (const qid of judgedOn.get(b._id)) {
    const q = queries.get(qid);
    if (!q) continue;
    const second = q.text.split(b.title).join('该对象');
    rows.push({
      _id: `MH_${a._id}_${qid}`,
      text: `「${a.title}」一文中提到了一个另有条目的对象。${second}`,
      ...(q.answers ? { answers: q.answers } : {}),
      hops: [a._id, b._id],
      bridge: b.title,
      source_query: qid,
    });
  }
}

mkdirSync(join(out, 'qrels'), { recursive: true });
copyFileSync(join(from, 'corpus.jsonl'), join(out, 'corpus.jsonl'));
writeFileSync(join(out, 'queries.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
writeFileSync(join(out, 'qrels', 'test.tsv'), ['query-id\tcorpus-id\tscore', ...rows.flatMap((r) => r.hops.map((d) => `${r._id}\t${d}\t1`))].join('\n') + '\n');
writeFileSync(
  join(out, 'README.md'),
  `# cmrc2018-2hop: a two-hop question set built from CMRC 2018 (trial)\n\n` +
    `Built by \`node scripts/eval/multihop-build.js\` (issue 16 item 7) from the CMRC 2018 trial passages and questions ` +
    `(BEIR layout, \`../shared/eval/cmrc2018-trial\`; CMRC 2018 is CC BY-SA 4.0, so is this derived set). ` +
    `${bridges.length} bridges (passage A names the title of passage B), ${rows.length} questions: each CMRC question judged on B, ` +
    `prefixed with a sentence naming A, with B's title replaced by 该对象 — B is reached through A. ` +
    `qrels: both hops (A and B) at grade 1; queries.jsonl also carries \`hops\` [A, B], the \`bridge\` title and the source question. ` +
    `Scored by \`rag multihop --dataset test/fixtures/multihop/cmrc2018-2hop\` (single-shot vs agent Recall@10 over both hops).\n\n` +
    `Bridges:\n\n${bridges.map(([a, b]) => `- ${a._id} ${a.title} → ${b._id} ${b.title}`).join('\n')}\n`,
);
process.stdout.write(JSON.stringify({ out, bridges: bridges.length, questions: rows.length }) + '\n');

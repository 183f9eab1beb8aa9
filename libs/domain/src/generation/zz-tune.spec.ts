import { readFileSync } from 'node:fs';
import { tokenize } from '../text';
import { answerContainsGold } from '../eval';
import { extractiveAnswer } from './extractive';
import { evidenceScore } from './evidence';

interface Doc { _id: string; title: string; text: string }
interface Q { _id: string; text: string; answers?: string[] }
const read = <T>(p: string): T[] => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);

function bm25(docs: Doc[]) {
  const toks = docs.map((d) => tokenize(d.title + ' ' + d.text));
  const avg = toks.reduce((a, t) => a + t.length, 0) / toks.length;
  const df = new Map<string, number>();
  const tfs = toks.map((t) => { const m = new Map<string, number>(); for (const x of t) m.set(x, (m.get(x) ?? 0) + 1); for (const x of m.keys()) df.set(x, (df.get(x) ?? 0) + 1); return m; });
  return (q: string, k: number) => {
    const qt = [...new Set(tokenize(q))];
    const sc = tfs.map((tf, i) => {
      let s = 0;
      for (const t of qt) { const f = tf.get(t) ?? 0; if (!f) continue; const d = df.get(t)!; const idf = Math.log(1 + (docs.length - d + 0.5) / (d + 0.5)); s += idf * (f * 1.9) / (f + 0.9 * (1 - 0.4 + 0.4 * toks[i]!.length / avg)); }
      return { i, s };
    });
    return sc.sort((a, b) => b.s - a.s).slice(0, k);
  };
}

const E = '/work/shared/eval/';
it('tune cmrc', () => {
  const docs = read<Doc>(E + 'cmrc2018-trial/corpus.jsonl');
  const qs = read<Q>(E + 'cmrc2018-trial/queries.jsonl');
  const search = bm25(docs);
  const gold = new Map<string, string>();
  for (const l of readFileSync(E + 'cmrc2018-trial/qrels/test.tsv', 'utf8').split('\n').slice(1)) { const [q, d] = l.split('\t'); if (q && d) gold.set(q, d); }
  const grid = [{ title: 1 }, { title: 0 }];
    for (const g of grid) for (const ms of [1, 3]) {
    const lens3: number[] = [];
    let contain = 0, first = 0, len = 0, goldOnly = 0;
    for (const q of qs) {
      const top = search(q.text, 5);
      const sources = top.map((h, r) => ({ ref: r + 1, title: g.title ? docs[h.i]!.title : undefined, text: docs[h.i]!.text, score: h.s }));
      const a = extractiveAnswer(q.text, sources, { maxSentences: ms });
      if (ms === 3) lens3.push(a.answer.length);
      if (answerContainsGold(a.answer, q.answers ?? [])) contain++;
      if (a.citedRefs[0] && docs[top[a.citedRefs[0] - 1]!.i]!._id === gold.get(q._id)) first++;
      len += a.answer.length;
      const gd = docs.find((d) => d._id === gold.get(q._id))!;
      if (answerContainsGold(extractiveAnswer(q.text, [{ ref: 1, title: g.title ? gd.title : undefined, text: gd.text, score: 1 }], { maxSentences: ms }).answer, q.answers ?? [])) goldOnly++;
    }
    console.log(JSON.stringify(g), `cmrc maxSentences=${ms} contain=${(contain / qs.length).toFixed(3)} goldPassageOnly=${(goldOnly / qs.length).toFixed(3)} firstCite=${(first / qs.length).toFixed(3)} avgLen=${(len / qs.length).toFixed(0)}`, ms === 3 ? 'p90len ' + lens3.sort((a, b) => a - b)[Math.floor(0.9 * lens3.length)] : '');
  }
  // evidence
  const ev = qs.map((q) => evidenceScore(q.text, docs.find((d) => d._id === gold.get(q._id))!.text)).sort((a, b) => a - b);
  const pct = (a: number[], p: number) => a[Math.floor(p * (a.length - 1))]!.toFixed(3);
  console.log('cmrc gold evidence p05/p10/p25/p50', pct(ev, 0.05), pct(ev, 0.1), pct(ev, 0.25), pct(ev, 0.5), 'share<0.5', ev.filter((x) => x < 0.5).length / ev.length);
  const top5ev = qs.map((q) => Math.max(...search(q.text, 5).map((h) => evidenceScore(q.text, docs[h.i]!.text)))).sort((a, b) => a - b);
  console.log('cmrc top5 evidence p05/p10/p25/p50', pct(top5ev, 0.05), pct(top5ev, 0.1), pct(top5ev, 0.25), pct(top5ev, 0.5), 'share<0.5', top5ev.filter((x) => x < 0.5).length / top5ev.length);
  const off = ['公司的年假政策是什么？', '如何烤制酸面包？', '今天天气怎么样？', '比特币的价格是多少？', '怎样学习Python编程？', '量子计算机的原理是什么？', '珠穆朗玛峰有多高？', '怎么治疗感冒？', '世界杯冠军是哪个国家？', '如何申请美国签证？', '光合作用的过程是什么？', '苹果手机的电池能用多久？'];
  for (const q of off) {
    const top = search(q, 5);
    const best = Math.max(0, ...top.map((h) => evidenceScore(q, docs[h.i]!.text)));
    const all = Math.max(...docs.map((d) => evidenceScore(q, d.text)));
    console.log('off', q, 'top5', best.toFixed(3), 'corpusMax', all.toFixed(3));
  }
});

it('tune cranfield', () => {
  const docs = read<Doc>(E + 'cranfield/corpus.jsonl');
  const qs = read<Q>(E + 'cranfield/queries.jsonl');
  const search = bm25(docs);
  const qrels = new Map<string, Map<string, number>>();
  for (const l of readFileSync(E + 'cranfield/qrels/dev.tsv', 'utf8').split('\n').slice(1)) { const [q, d, g] = l.split('\t'); if (q && d) { if (!qrels.has(q)) qrels.set(q, new Map()); qrels.get(q)!.set(d, Number(g)); } }
  const judged = qs.filter((q) => qrels.has(q._id));
  const pct = (a: number[], p: number) => a[Math.floor(p * (a.length - 1))]!.toFixed(3);
  const top5ev = judged.map((q) => Math.max(...search(q.text, 5).map((h) => evidenceScore(q.text, docs[h.i]!.title + ' ' + docs[h.i]!.text)))).sort((a, b) => a - b);
  console.log('cran top5 evidence p05/p10/p25/p50', pct(top5ev, 0.05), pct(top5ev, 0.1), pct(top5ev, 0.25), pct(top5ev, 0.5), 'share<0.5', top5ev.filter((x) => x < 0.5).length / top5ev.length);
  const relev = judged.map((q) => Math.max(...[...qrels.get(q._id)!.keys()].map((id) => docs.find((d) => d._id === id)).filter((d): d is Doc => !!d).map((d) => evidenceScore(q.text, d.text)))).sort((a, b) => a - b);
  console.log('cran best-relevant evidence p05/p10/p25/p50', pct(relev, 0.05), pct(relev, 0.1), pct(relev, 0.25), pct(relev, 0.5));
  const off = ['what is the capital of France', 'how do I bake sourdough bread', 'who won the football world cup in 2018', 'how to reset my password', 'what is the price of bitcoin today', 'best hotels in paris', 'how does photosynthesis work in plants', 'symptoms of the flu', 'how to learn python programming', 'what is the vacation policy for employees', 'how many moons does jupiter have', 'recipe for chocolate cake', 'what is the speed of light', 'what is the weather like tomorrow', 'who wrote hamlet', 'how to change a car tire'];
  for (const q of off) {
    const best = Math.max(0, ...search(q, 5).map((h) => evidenceScore(q, docs[h.i]!.text)));
    const all = Math.max(...docs.map((d) => evidenceScore(q, d.text)));
    console.log('off', q, 'top5', best.toFixed(3), 'corpusMax', all.toFixed(3));
  }
  let len = 0;
  for (const q of judged.slice(0, 5)) {
    const top = search(q.text, 5);
    const a = extractiveAnswer(q.text, top.map((h, r) => ({ ref: r + 1, text: docs[h.i]!.text, score: h.s })));
    console.log('Q:', q.text, '\nA:', a.answer);
    len += a.answer.length;
  }
});

import { readFileSync } from 'node:fs';
import { tokenize } from '../text';
import { containsCjk, isCjkToken, normText, questionBigrams, questionTokens } from './lexical';
import { splitSentences } from './sentences';

interface Doc { _id: string; title: string; text: string }
interface Q { _id: string; text: string; answers?: string[] }
const read = <T>(p: string): T[] => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);

let LW = false;
const wt = (t: string) => (!LW ? 1 : isCjkToken(t) ? Math.min(3, t.length) * 2 : Math.max(1, Math.min(8, t.length - 2)));
function cov(question: string, text: string, alpha: number): number {
  const qTokens = questionTokens(question);
  if (qTokens.length === 0) return 0;
  const tText = normText(text);
  const textTokens = new Set(tokenize(text));
  let matched = 0;
  let tot = 0;
  for (const q of qTokens) {
    const W = wt(q); tot += W;
    if (isCjkToken(q)) { if (tText.includes(q)) matched += W; }
    else if (textTokens.has(q)) matched += W;
    else if (q.length >= 6) { const need = Math.max(5, q.length - 3); for (const t of textTokens) if (t.length >= need && t.slice(0, need) === q.slice(0, need)) { matched += 0.5 * W; break; } }
  }
  const w = matched / (tot + alpha * tot / qTokens.length);
  if (!containsCjk(question)) return w;
  const bg = questionBigrams(question);
  if (!bg.length) return w;
  return (w + bg.filter((b) => tText.includes(b)).length / (bg.length + alpha)) / 2;
}
function variant(question: string, text: string, alpha: number, win: number, mix: number): number {
  const whole = cov(question, text, alpha);
  if (mix === 0) return whole;
  const s = splitSentences(text).map((x) => x.text);
  let best = 0;
  for (let i = 0; i < s.length; i++) best = Math.max(best, cov(question, s.slice(i, i + win).join(' '), alpha));
  return (1 - mix) * whole + mix * best;
}
function bm25(docs: Doc[]) {
  const toks = docs.map((d) => tokenize(d.title + ' ' + d.text));
  const avg = toks.reduce((a, t) => a + t.length, 0) / toks.length;
  const df = new Map<string, number>();
  const tfs = toks.map((t) => { const m = new Map<string, number>(); for (const x of t) m.set(x, (m.get(x) ?? 0) + 1); for (const x of m.keys()) df.set(x, (df.get(x) ?? 0) + 1); return m; });
  return (q: string, k: number) => {
    const qt = [...new Set(tokenize(q))];
    return tfs.map((tf, i) => { let s = 0; for (const t of qt) { const f = tf.get(t) ?? 0; if (!f) continue; const d = df.get(t)!; s += Math.log(1 + (docs.length - d + 0.5) / (d + 0.5)) * (f * 1.9) / (f + 0.9 * (0.6 + 0.4 * toks[i]!.length / avg)); } return { i, s }; }).sort((a, b) => b.s - a.s).slice(0, k);
  };
}
const E = '/work/shared/eval/';
const sets = [
  { dir: 'cranfield', off: ['what is the capital of France', 'how do I bake sourdough bread', 'who won the football world cup in 2018', 'how to reset my password', 'what is the price of bitcoin today', 'best hotels in paris', 'how does photosynthesis work in plants', 'symptoms of the flu', 'how to learn python programming', 'what is the vacation policy for employees', 'how many moons does jupiter have', 'recipe for chocolate cake', 'who wrote hamlet', 'how to change a car tire', 'what is the interest rate on a mortgage', 'how do vaccines train the immune system'] },
  { dir: 'cmrc2018-trial', off: ['如何烤制酸面包？', '今天天气怎么样？', '比特币的价格是多少？', '怎样学习Python编程？', '量子计算机的原理是什么？', '珠穆朗玛峰有多高？', '怎么治疗感冒？', '世界杯冠军是哪个国家？', '如何申请美国签证？', '光合作用的过程是什么？', '苹果手机的电池能用多久？', '公司的年假政策是什么？', '房贷利率是多少？', '疫苗如何训练免疫系统？'] },
];
it('variants', () => {
  for (const set of sets) {
    const docs = read<Doc>(E + set.dir + '/corpus.jsonl');
    const qids = new Set(readFileSync(E + set.dir + '/qrels/' + (set.dir === 'cranfield' ? 'dev' : 'test') + '.tsv', 'utf8').split('\n').slice(1).map((l) => l.split('\t')[0]));
    const qs = read<Q>(E + set.dir + '/queries.jsonl').filter((q) => qids.has(q._id));
    const search = bm25(docs);
    const tops = qs.map((q) => ({ q: q.text, top: search(q.text, 5).map((h) => docs[h.i]!.text) }));
    const offTops = set.off.map((q) => ({ q, top: search(q, 5).map((h) => docs[h.i]!.text) }));
    for (const [alpha, win, mix, lw] of [[0, 2, 0, 0], [0.5, 2, 0, 0], [0, 2, 0, 1], [0.25, 2, 0, 1], [0.5, 2, 0, 1]] as const) {
      LW = lw === 1;
      const inv = tops.map((t) => Math.max(...t.top.map((x) => variant(t.q, x, alpha, win, mix)))).sort((a, b) => a - b);
      const offv = offTops.map((t) => Math.max(0, ...t.top.map((x) => variant(t.q, x, alpha, win, mix))));
      const p = (a: number[], f: number) => a[Math.floor(f * (a.length - 1))]!.toFixed(2);
      console.log(set.dir, `a=${alpha} lw=${lw}`, 'in p05', p(inv, 0.05), 'p10', p(inv, 0.1), 'p25', p(inv, 0.25), 'in<0.5', (inv.filter((x) => x < 0.5).length / inv.length).toFixed(3), 'off>=0.5', offv.filter((x) => x >= 0.5).length + '/' + offv.length, 'off', offv.map((x) => x.toFixed(2)).join(' '));
    }
  }
});

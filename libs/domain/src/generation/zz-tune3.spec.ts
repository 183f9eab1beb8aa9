import { readFileSync } from 'node:fs';
import { answerContainsGold } from '../eval';
import { extractiveAnswer } from './extractive';
import { splitSentences } from './sentences';

interface Doc { _id: string; title: string; text: string }
interface Q { _id: string; text: string; answers?: string[] }
const read = <T>(p: string): T[] => readFileSync(p, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
const E = '/work/shared/eval/';
it('failures', () => {
  const docs = read<Doc>(E + 'cmrc2018-trial/corpus.jsonl');
  const qs = read<Q>(E + 'cmrc2018-trial/queries.jsonl');
  const gold = new Map<string, string>();
  for (const l of readFileSync(E + 'cmrc2018-trial/qrels/test.tsv', 'utf8').split('\n').slice(1)) { const [q, d] = l.split('\t'); if (q && d) gold.set(q, d); }
  let shown = 0, inAnySentence = 0, spans = 0;
  for (const q of qs) {
    const gd = docs.find((d) => d._id === gold.get(q._id))!;
    const sents = splitSentences(gd.text);
    if (sents.some((s) => answerContainsGold(s.text, q.answers ?? []))) inAnySentence++;
    else { spans++; if (spans < 25) console.log('CROSS', q.answers?.[0], '|', sents.map((x) => x.text).filter((t) => (q.answers ?? []).some((g) => g.slice(0, 4) && t.includes(g.slice(0, 4)))).join(' ## ').slice(0, 300)); }
    const a = extractiveAnswer(q.text, [{ ref: 1, text: gd.text, score: 1 }], { maxSentences: 1 });
    if (!answerContainsGold(a.answer, q.answers ?? []) && shown < 0 && sents.some((s) => answerContainsGold(s.text, q.answers ?? []))) {
      shown++;
      console.log('Q', q.text, 'GOLD', q.answers?.[0], '\n  A', a.answer.slice(0, 200), '\n  G', sents.find((s) => answerContainsGold(s.text, q.answers ?? []))!.text.slice(0, 200));
    }
  }
  console.log('gold within a single sentence', inAnySentence, 'crossing', spans);
});

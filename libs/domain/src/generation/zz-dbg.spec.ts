import { readFileSync } from 'node:fs';
import { tokenize } from '../text';
import { questionBigrams, questionTokens } from './lexical';
import { splitSentences } from './sentences';
it('dbg', () => {
  const docs = readFileSync('/work/shared/eval/cmrc2018-trial/corpus.jsonl', 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { _id: string; title: string; text: string });
  const d = docs.find((x) => x.text.includes('罗保铭，天津人'))!;
  const q = '1992年4月，罗保铭担任什么职务？';
  console.log(questionTokens(q), questionBigrams(q), d.title);
  for (const s of splitSentences(d.text).slice(0, 8)) console.log(JSON.stringify(s.text.slice(0, 60)), tokenize(s.text).slice(0, 15).join('|'));
});

import { CHINESE_STOP_WORDS, containsCjk, tokenize } from '../text';

/**
 * Lexical helpers shared by the extractive answerer and the relevance gate (internal to generation/).
 */

/**
 * Words that only shape a question ("explain", "为什么") and say nothing about its topic. They are
 * dropped from the question before it is matched against sources, on top of the tokenizer's stop words.
 */
const QUESTION_WORDS = new Set(
  (
    'explain describe tell please know find give list show help want need like get make use used using ' +
    'kind type way ways thing things example examples much many info information mean meaning called ' +
    '为什么 哪里 哪儿 哪个 哪位 哪种 哪年 哪一年 哪天 何时 何地 何处 何种 多久 多长 多大 多高 多远 怎样 怎么样 什么样 请问 是谁 ' +
    '为何 几年 几个 几种 哪些 多少 什么 怎么 如何 是否 谁 哪 几'
  ).split(' '),
);

const CJK_CHAR = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/u;

export { containsCjk };

/** Normalised text for substring tests: NFKC, lower case. */
export function normText(text: string): string {
  return text.normalize('NFKC').toLowerCase();
}

/** Content tokens of a question: the tokenizer's tokens minus question-shaping words, deduplicated. */
export function questionTokens(question: string): string[] {
  return [...new Set(tokenize(question).filter((t) => !QUESTION_WORDS.has(t)))];
}

const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });

/**
 * Character bigrams of a question's CJK runs. Runs are broken at punctuation, Latin text, stop words
 * and question words, so "尤金袋鼠分布在哪些地区" yields 尤金 金袋 袋鼠 鼠分 分布 and 地区, not 在哪 or
 * 哪些. One-character runs yield nothing (the word tokens cover them).
 */
export function questionBigrams(question: string): string[] {
  const out = new Set<string>();
  let run = '';
  const flush = () => {
    for (let i = 0; i + 1 < run.length; i++) out.add(run.slice(i, i + 2));
    run = '';
  };
  for (const seg of segmenter.segment(normText(question))) {
    const word = seg.segment;
    if (!seg.isWordLike || !CJK_CHAR.test(word) || CHINESE_STOP_WORDS.has(word) || QUESTION_WORDS.has(word)) {
      flush();
      continue;
    }
    run += word;
  }
  flush();
  return [...out];
}

/** Every CJK character bigram of a text (for set lookups). */
export function textBigrams(text: string): Set<string> {
  const out = new Set<string>();
  const t = normText(text);
  for (let i = 0; i + 1 < t.length; i++) {
    const a = t[i]!;
    const b = t[i + 1]!;
    if (CJK_CHAR.test(a) && CJK_CHAR.test(b)) out.add(a + b);
  }
  return out;
}

export function isCjkToken(token: string): boolean {
  return CJK_CHAR.test(token);
}

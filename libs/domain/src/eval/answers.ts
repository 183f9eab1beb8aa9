import { splitSentences } from '../generation/sentences';
import { answerContainsGold } from './metrics';

/** `[n]` / `[1, 2]` citation markers (they sit between sentences in extractive answers). */
const CITATION = /\s*\[\s*\d+(?:\s*[,，、;；-]\s*\d+)*\s*\]/gu;

/** The first sentence of an answer, citation markers removed ('' for an empty answer). */
export function firstSentence(answer: string): string {
  const text = answer.replace(CITATION, '').trim();
  return splitSentences(text)[0]?.text ?? '';
}

/** Whether the answer's first sentence contains a gold answer (issue 15: the point should lead). */
export function goldInFirstSentence(answer: string, golds: readonly string[]): boolean {
  return answerContainsGold(firstSentence(answer), golds);
}

/**
 * Whether a statement of an answer (`statements[]`, issue 15 item 3) is supported by the chunks it cites, read
 * tolerantly: `support` as a number in [0, 1] (supported at 0.5 or more), a label (`supported`), or an object with
 * `supported: boolean`; a statement with no readable support counts as unsupported.
 */
export function statementSupported(statement: unknown): boolean {
  if (typeof statement !== 'object' || statement === null) return false;
  const s = statement as Record<string, unknown>;
  if (typeof s['supported'] === 'boolean') return s['supported'];
  const support = s['support'];
  if (typeof support === 'number') return support >= 0.5;
  if (typeof support === 'string') return support === 'supported';
  if (typeof support === 'boolean') return support;
  if (typeof support === 'object' && support !== null) {
    const o = support as Record<string, unknown>;
    if (typeof o['supported'] === 'boolean') return o['supported'];
    if (typeof o['label'] === 'string') return o['label'] === 'supported';
    if (typeof o['score'] === 'number') return o['score'] >= 0.5;
  }
  return false;
}

/** Counts of supported statements over answers (answers without `statements` add nothing). */
export function statementSupport(answers: readonly { statements?: readonly unknown[] }[]): { statements: number; supported: number } {
  let statements = 0;
  let supported = 0;
  for (const a of answers) {
    for (const s of a.statements ?? []) {
      statements++;
      if (statementSupported(s)) supported++;
    }
  }
  return { statements, supported };
}

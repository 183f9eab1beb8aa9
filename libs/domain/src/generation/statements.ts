import { parseCitations } from './citations';
import { splitSentences } from './sentences';

/**
 * One claim of an answer and the sources it cites (issue 15 item 3). `source_ids` are citation refs: the `[n]`
 * numbers of the answer, 1-based into the sources handed to the generator (the answer's `citations[].ref`).
 */
export interface AnswerStatement {
  text: string;
  source_ids: number[];
}

/** The JSON schema an LLM is asked to answer in (structured output: the local grammar, or `response_format`). */
export const STATEMENTS_JSON_SCHEMA = {
  type: 'object',
  properties: {
    statements: {
      type: 'array',
      items: {
        type: 'object',
        properties: { text: { type: 'string' }, source_ids: { type: 'array', items: { type: 'integer' } } },
        required: ['text', 'source_ids'],
      },
    },
  },
  required: ['statements'],
} as const;

/** Citation markers as the answers write them: [1], [1, 2], [1-3], ［1］, 【1】. */
const CITATION_MARK = /\s*[[［【]\s*\d+(?:\s*(?:[,，、;；]|[-–—~～])\s*\d+)*\s*[\]］】]/gu;

/** The text without its citation markers (and the space before each). */
export function withoutCitations(text: string): string {
  return text.replace(CITATION_MARK, '').replace(/\s+([.!?。！？；;:：,，])/gu, '$1').trim();
}

/**
 * The statements of an answer written as cited text (an LLM's free text, or the fallback when its JSON does not
 * parse): one per sentence, citing the refs written in it. A sentence without a citation inherits nothing: it cites
 * no source and so cannot be verified (the verifier reports it unsupported).
 */
export function statementsFromCitedText(answer: string, maxRef: number): AnswerStatement[] {
  const out: AnswerStatement[] = [];
  for (const s of splitSentences(answer)) {
    const text = withoutCitations(s.text);
    if (!/[\p{L}\p{N}]/u.test(text)) {
      // A citation standing alone after a sentence end ("... lift. [2]") belongs to the sentence before it.
      const prev = out[out.length - 1];
      if (prev) for (const r of parseCitations(s.text, maxRef)) if (!prev.source_ids.includes(r)) prev.source_ids.push(r);
      continue;
    }
    out.push({ text, source_ids: parseCitations(s.text, maxRef) });
  }
  return out;
}

/**
 * Reads an LLM's structured answer: the parsed value of a constrained call, or raw text that should be JSON. Raw text
 * is repaired first — a Markdown code fence, prose around the object, trailing commas, a bare array of statements —
 * then checked: every statement needs a non-empty `text`; `source_ids` keeps the integers in 1..maxRef (numbers
 * written as strings, or "[2]", are read; others dropped). Returns null when nothing usable is found (the caller
 * then falls back to the cited text).
 */
export function parseStructuredStatements(value: unknown, maxRef: number): AnswerStatement[] | null {
  let v = value;
  if (typeof v === 'string') {
    const raw = v;
    v = repairJson(raw);
    if (v === undefined) return salvageTruncated(raw, maxRef);
  }
  const list = Array.isArray(v) ? v : typeof v === 'object' && v !== null ? (v as Record<string, unknown>)['statements'] : undefined;
  if (!Array.isArray(list)) return null;
  const out: AnswerStatement[] = [];
  for (const item of list) {
    if (typeof item !== 'object' || item === null) continue;
    const o = item as Record<string, unknown>;
    const raw = typeof o['text'] === 'string' ? o['text'] : '';
    const text = withoutCitations(raw);
    if (!text) continue;
    const ids: number[] = [];
    const add = (n: number) => Number.isInteger(n) && n >= 1 && n <= maxRef && !ids.includes(n) && ids.push(n);
    const given = o['source_ids'];
    if (Array.isArray(given)) for (const x of given) add(typeof x === 'number' ? x : typeof x === 'string' ? Number(x.replace(/[^\d]/g, '') || NaN) : NaN);
    for (const r of parseCitations(raw, maxRef)) add(r); // refs written into the text count too
    out.push({ text, source_ids: ids });
  }
  return out.length > 0 ? out : null;
}

/**
 * The statements of JSON cut off mid-way (an output token limit): every `"text": "…"` written, the last one possibly
 * unterminated, with the `source_ids` written after it when they are complete. Null when there is none.
 */
function salvageTruncated(raw: string, maxRef: number): AnswerStatement[] | null {
  const out: AnswerStatement[] = [];
  const re = /"text"\s*:\s*"((?:[^"\\]|\\.)*)("?)(?:\s*,\s*"source_ids"\s*:\s*\[([\d\s,]*)\])?/gu;
  for (const m of raw.matchAll(re)) {
    let text: string;
    try {
      text = JSON.parse(`"${m[1]!.replace(/\\$/u, '')}"`) as string;
    } catch {
      text = m[1]!;
    }
    text = withoutCitations(text);
    if (!text) continue;
    const ids = (m[3] ?? '')
      .split(',')
      .map((x) => Number(x.trim()))
      .filter((n, i, all) => Number.isInteger(n) && n >= 1 && n <= maxRef && all.indexOf(n) === i);
    for (const r of parseCitations(m[1]!, maxRef)) if (!ids.includes(r)) ids.push(r);
    out.push({ text, source_ids: ids });
  }
  return out.length > 0 ? out : null;
}

function repairJson(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/iu.exec(text);
  const body = (fenced ? fenced[1]! : text).trim();
  const attempts = [body];
  const obj = sliceBetween(body, '{', '}');
  if (obj) attempts.push(obj);
  const arr = sliceBetween(body, '[', ']');
  if (arr) attempts.push(arr);
  for (const a of attempts) {
    for (const candidate of [a, a.replace(/,\s*([}\]])/gu, '$1')]) {
      try {
        return JSON.parse(candidate) as unknown;
      } catch {
        // next repair
      }
    }
  }
  return undefined;
}

function sliceBetween(s: string, open: string, close: string): string | null {
  const a = s.indexOf(open);
  const b = s.lastIndexOf(close);
  return a >= 0 && b > a ? s.slice(a, b + 1) : null;
}

/**
 * Writes statements as the answer text: each followed by its citations ("Lift rises [1][2]." / "升力增大[1]。").
 * Chinese statements are joined without a space.
 */
export function renderStatements(statements: readonly AnswerStatement[]): string {
  const cjk = statements.some((s) => /[\u3400-\u9fff]/u.test(s.text));
  return statements.map((s) => withCitations(s.text, s.source_ids)).join(cjk ? '' : ' ');
}

/** "Lift rises." → "Lift rises [1]." ; "升力增大。" → "升力增大[1]。" ; "No end" → "No end [1]"; no refs: unchanged. */
export function withCitations(sentence: string, refs: readonly number[]): string {
  if (refs.length === 0) return sentence;
  const m = /^(.*?)\s*([.!?。！？；;:：]+["'’”」』）)\]】》]*)$/su.exec(sentence);
  const body = m ? m[1]! : sentence;
  const tail = m ? m[2]! : '';
  const sep = /[\u3000-\u9fff\uff00-\uffef]$/u.test(body) ? '' : ' ';
  return `${body}${sep}${refs.map((r) => `[${r}]`).join('')}${tail}`;
}

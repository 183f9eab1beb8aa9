/**
 * LLM-judged answer metrics, after the RAGAS definitions (Es et al., "RAGAS: Automated Evaluation of Retrieval
 * Augmented Generation", 2023; docs.ragas.io metrics):
 * - faithfulness = |statements of the answer supported by the retrieved context| / |statements of the answer|; the
 *   LLM first breaks the answer into standalone statements, then gives each a verdict (1 supported / 0 not) against
 *   the context;
 * - answer relevancy = mean cosine similarity between the embedding of the question and the embeddings of N questions
 *   the LLM generates from the answer alone (N = 3 as in RAGAS); 0 when the LLM marks the answer noncommittal
 *   ("I don't know", evasive).
 * This file holds the pure part: the prompts, the JSON schemas the output is constrained to, tolerant parsing of what
 * the model wrote, and the scores. The calls are made by the CLI (apps/cli/src/judge.ts).
 */

export interface JudgeMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export const GENERATED_QUESTIONS = 3;

// ------------------------------------------------------------------------------------------------ prompts

export function statementsPrompt(question: string, answer: string): JudgeMessage[] {
  return [
    {
      role: 'system',
      content:
        'Given a question and an answer, break the answer down into standalone statements: each one fully understandable ' +
        'without the others (no pronouns), one fact each. Respond only with JSON: {"statements": ["...", "..."]}.',
    },
    { role: 'user', content: `Question: ${question}\nAnswer: ${answer}` },
  ];
}

export function verdictsPrompt(context: string, statements: readonly string[]): JudgeMessage[] {
  return [
    {
      role: 'system',
      content:
        'Judge the faithfulness of statements to a context. For each statement, verdict 1 if it can be directly inferred ' +
        'from the context, 0 if it cannot. Respond only with JSON: {"verdicts": [{"statement": "...", "reason": "...", "verdict": 0 or 1}]}, ' +
        'one entry per statement, in order.',
    },
    { role: 'user', content: `Context:\n${context}\n\nStatements:\n${statements.map((s, i) => `${i + 1}. ${s}`).join('\n')}` },
  ];
}

export function questionsPrompt(answer: string, n = GENERATED_QUESTIONS): JudgeMessage[] {
  return [
    {
      role: 'system',
      content:
        `Write ${n} different questions that the given answer answers, and say whether the answer is noncommittal ` +
        '(evasive, vague or "I don\'t know": noncommittal 1; a real answer: 0). ' +
        'Respond only with JSON: {"questions": ["...", "..."], "noncommittal": 0 or 1}.',
    },
    { role: 'user', content: `Answer: ${answer}` },
  ];
}

// ------------------------------------------------------------------------------------------------ schemas

export const STATEMENTS_SCHEMA = {
  type: 'object',
  properties: { statements: { type: 'array', items: { type: 'string' } } },
  required: ['statements'],
} as const;

export const VERDICTS_SCHEMA = {
  type: 'object',
  properties: {
    verdicts: {
      type: 'array',
      items: {
        type: 'object',
        properties: { statement: { type: 'string' }, reason: { type: 'string' }, verdict: { type: 'integer', enum: [0, 1] } },
        required: ['statement', 'reason', 'verdict'],
      },
    },
  },
  required: ['verdicts'],
} as const;

export const QUESTIONS_SCHEMA = {
  type: 'object',
  properties: { questions: { type: 'array', items: { type: 'string' } }, noncommittal: { type: 'integer', enum: [0, 1] } },
  required: ['questions', 'noncommittal'],
} as const;

// ------------------------------------------------------------------------------------------------ parsing

/**
 * The first JSON object in a model's text: the whole text when it parses, else the span from the first `{` to its
 * matching `}` (code fences and chatter around it are common), else `null`.
 */
export function parseJsonObject(text: string): Record<string, unknown> | null {
  const attempt = (s: string): Record<string, unknown> | null => {
    try {
      const v: unknown = JSON.parse(s);
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  };
  const whole = attempt(text.trim());
  if (whole) return whole;
  const start = text.indexOf('{');
  if (start < 0) return null;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i]!;
    if (inString) {
      if (ch === '\\') i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return attempt(text.slice(start, i + 1));
  }
  return null;
}

const strings = (v: unknown): string[] | null =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string').map((s) => s.trim()).filter((s) => s.length > 0) : null;

/** The statements, or `null` when the output has no `statements` array. */
export function parseStatements(value: unknown): string[] | null {
  const o = typeof value === 'string' ? parseJsonObject(value) : (value as Record<string, unknown> | null);
  return o ? strings(o['statements']) : null;
}

/**
 * One verdict (1 | 0) per statement, in order, or `null` when the output is unusable. A verdict list shorter than
 * the statements counts the missing ones as 0 (not shown supported); booleans and "1"/"0" strings are accepted.
 */
export function parseVerdicts(value: unknown, statements: number): (0 | 1)[] | null {
  const o = typeof value === 'string' ? parseJsonObject(value) : (value as Record<string, unknown> | null);
  const list = o?.['verdicts'];
  if (!Array.isArray(list)) return null;
  const verdicts = list.slice(0, statements).map((v): 0 | 1 => {
    const x = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)['verdict'] : v;
    return x === 1 || x === true || x === '1' ? 1 : 0;
  });
  while (verdicts.length < statements) verdicts.push(0);
  return verdicts;
}

/** The generated questions and the noncommittal flag, or `null` when the output has no `questions` array. */
export function parseGeneratedQuestions(value: unknown): { questions: string[]; noncommittal: boolean } | null {
  const o = typeof value === 'string' ? parseJsonObject(value) : (value as Record<string, unknown> | null);
  const questions = o ? strings(o['questions']) : null;
  if (!o || !questions) return null;
  const nc = o['noncommittal'];
  return { questions, noncommittal: nc === 1 || nc === true || nc === '1' };
}

// ------------------------------------------------------------------------------------------------ scores

/** Faithfulness: the supported share of the statements; `null` when the answer has no statement to judge. */
export function faithfulnessScore(verdicts: readonly (0 | 1)[]): number | null {
  if (verdicts.length === 0) return null;
  return verdicts.reduce<number>((s, v) => s + v, 0) / verdicts.length;
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`cosine: dimensions differ (${a.length} vs ${b.length})`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Answer relevancy: mean cosine of the question to each generated question; 0 when noncommittal; `null` with none. */
export function answerRelevancyScore(question: ArrayLike<number>, generated: readonly ArrayLike<number>[], noncommittal: boolean): number | null {
  if (generated.length === 0) return null;
  if (noncommittal) return 0;
  return generated.reduce((s, g) => s + cosine(question, g), 0) / generated.length;
}

/** Mean of the non-null values, `null` when there are none. */
export function meanOf(values: readonly (number | null)[]): number | null {
  const xs = values.filter((v): v is number => v !== null && Number.isFinite(v));
  return xs.length ? xs.reduce((s, v) => s + v, 0) / xs.length : null;
}

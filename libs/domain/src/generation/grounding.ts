import { shouldRefuse, type RefusalDecision } from './evidence';
import { extractiveAnswer, type ExtractiveAnswer, type ExtractiveSource } from './extractive';
import type { ScriptCalibration } from './calibration';
import type { LexicalMemo } from './lexical-memo';

/**
 * The CPU-heavy, question-dependent part of generation in one call: the relevance gate and/or the extractive
 * answer over the numbered sources. One task is one round trip when it runs in a worker thread (issue 13 item 3):
 * - `gate`: the gate only (the LLM answers next);
 * - `answer`: the gate, then the extractive answer unless the gate refuses (no LLM);
 * - `extract`: the extractive answer only (the LLM failed after the gate let the question through).
 * Plain data in and out (structured-clone safe).
 */
export type GroundingMode = 'gate' | 'answer' | 'extract';

export interface GroundingTask {
  mode: GroundingMode;
  question: string;
  /** Sources in citation order ([1]..[n]); `text` is what the gate and the answerer read (the parent text when there is one). */
  sources: ExtractiveSource[];
  /** Evidence under this → refuse (modes `gate` and `answer`). */
  threshold: number;
  /**
   * The index's idf of each question token (calibration.ts questionTermWeights) and of an unseen token: with them
   * the gate scores a Latin-script question on its idf coverage (evidence.ts gateSignals). Absent: the idf-free gate.
   */
  termWeights?: Record<string, number>;
  unseenWeight?: number;
  /** The index's calibration for the question's script and the top hit's dense similarity (evidence.ts GateOptions). */
  calibration?: ScriptCalibration;
  denseTop?: number;
}

export interface GroundingResult {
  /** Present for modes `gate` and `answer`. */
  gate?: RefusalDecision;
  /** Present for mode `extract`, and for `answer` when the gate did not refuse. */
  extractive?: ExtractiveAnswer;
}

const MODES: ReadonlySet<string> = new Set(['gate', 'answer', 'extract']);

/**
 * Checks a task that crossed a thread boundary; returns the problem, or null when it is well-formed.
 * (The worker validates what it receives instead of trusting its caller's types.)
 */
export function groundingTaskProblem(task: unknown): string | null {
  if (typeof task !== 'object' || task === null) return 'a grounding task must be an object';
  const t = task as Record<string, unknown>;
  if (typeof t['mode'] !== 'string' || !MODES.has(t['mode'])) return `mode must be gate, answer or extract (got ${JSON.stringify(t['mode'])})`;
  if (typeof t['question'] !== 'string') return 'question must be a string';
  if (typeof t['threshold'] !== 'number' || !Number.isFinite(t['threshold'])) return 'threshold must be a finite number';
  if (!Array.isArray(t['sources'])) return 'sources must be an array';
  for (const [i, s] of (t['sources'] as unknown[]).entries()) {
    if (typeof s !== 'object' || s === null) return `sources[${i}] must be an object`;
    const src = s as Record<string, unknown>;
    if (typeof src['text'] !== 'string') return `sources[${i}].text must be a string`;
    if (typeof src['ref'] !== 'number' || !Number.isInteger(src['ref'])) return `sources[${i}].ref must be an integer`;
    if (typeof src['score'] !== 'number' || Number.isNaN(src['score'])) return `sources[${i}].score must be a number`;
    if (src['title'] !== undefined && typeof src['title'] !== 'string') return `sources[${i}].title must be a string when present`;
  }
  const weights = t['termWeights'];
  if (weights !== undefined) {
    if (typeof weights !== 'object' || weights === null || Array.isArray(weights)) return 'termWeights must be an object when present';
    for (const [k, v] of Object.entries(weights)) if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) return `termWeights[${JSON.stringify(k)}] must be a finite number >= 0`;
  }
  const unseen = t['unseenWeight'];
  if (unseen !== undefined && (typeof unseen !== 'number' || !Number.isFinite(unseen) || unseen < 0)) return 'unseenWeight must be a finite number >= 0 when present';
  const dense = t['denseTop'];
  if (dense !== undefined && (typeof dense !== 'number' || !Number.isFinite(dense))) return 'denseTop must be a finite number when present';
  const cal = t['calibration'];
  if (cal !== undefined) {
    const c = (typeof cal === 'object' && cal !== null ? cal : {}) as Record<string, unknown>;
    const scaleOk = (v: unknown) => typeof v === 'object' && v !== null && ['q50', 'q95'].every((k) => Number.isFinite((v as Record<string, unknown>)[k]));
    if (!scaleOk(c['lexical']) || (c['dense'] !== undefined && !scaleOk(c['dense'])) || typeof c['target'] !== 'number' || !(c['target'] > 0)) {
      return 'calibration must be {lexical: {q50, q95}, dense?: {q50, q95}, target > 0} when present';
    }
  }
  return null;
}

/** Runs a grounding task (see GroundingMode); with a `memo`, text analysis seen before is reused (same result). */
export function runGrounding(task: GroundingTask, memo?: LexicalMemo): GroundingResult {
  const { question, sources, threshold, mode, termWeights, unseenWeight, calibration, denseTop } = task;
  const out: GroundingResult = {};
  if (mode !== 'extract') {
    out.gate = shouldRefuse(
      question,
      sources.map((s) => ({ text: s.text, score: s.score })),
      threshold,
      termWeights || calibration
        ? { memo, termWeights, ...(unseenWeight !== undefined ? { unseenWeight } : {}), ...(calibration ? { calibration } : {}), ...(denseTop !== undefined ? { denseTop } : {}) }
        : memo,
    );
    if (mode === 'gate' || out.gate.refuse) return out;
  }
  out.extractive = extractiveAnswer(question, sources, memo ? { memo } : {});
  return out;
}

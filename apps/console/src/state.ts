import type { SseEvent } from './sse';

export type Scope = 'ingest' | 'query' | 'admin';

export interface Citation {
  ref: number;
  document_id: string;
  chunk_id: string;
  title: string;
  text: string;
  score: number;
  source_url?: string;
  heading_path?: string[];
}

/** A statement of the answer and its verification (issue 15, @rag/contracts Statement); shown when the API returns them. */
export interface Statement {
  text: string;
  /** Refs of the citations it cites. */
  source_ids: number[];
  /** In [0, 1]: how well the cited sources support it. */
  support: number;
  supported: boolean;
}

export interface Answer {
  answer: string;
  refused: boolean;
  citations: Citation[];
  degraded: string[];
  timings_ms: Record<string, number>;
  trace_id: string;
  statements?: Statement[];
}

export interface AskState {
  phase: 'idle' | 'streaming' | 'done' | 'error';
  question: string;
  /** The answer text so far (deltas while streaming, the final answer once done). */
  text: string;
  answer: Answer | null;
  error: { code: string; message: string } | null;
  traceId: string | null;
  feedback: 'none' | 'sending' | 'up' | 'down' | 'failed';
}

export const initialAsk: AskState = { phase: 'idle', question: '', text: '', answer: null, error: null, traceId: null, feedback: 'none' };

export type AskAction =
  | { type: 'start'; question: string }
  | { type: 'event'; event: SseEvent }
  | { type: 'failed'; code: string; message: string }
  | { type: 'ended' }
  | { type: 'feedback'; state: AskState['feedback'] };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Validates a `done` payload enough to render it; null when it is not an answer. */
export function parseAnswer(v: unknown): Answer | null {
  if (!isRecord(v) || typeof v.answer !== 'string' || typeof v.refused !== 'boolean' || !Array.isArray(v.citations) || typeof v.trace_id !== 'string') return null;
  return {
    answer: v.answer,
    refused: v.refused,
    citations: v.citations.filter(isRecord) as unknown as Citation[],
    degraded: Array.isArray(v.degraded) ? v.degraded.filter((d): d is string => typeof d === 'string') : [],
    timings_ms: isRecord(v.timings_ms) ? (Object.fromEntries(Object.entries(v.timings_ms).filter(([, n]) => typeof n === 'number')) as Record<string, number>) : {},
    trace_id: v.trace_id,
    ...(Array.isArray(v.statements) ? { statements: v.statements.filter(isRecord) as unknown as Statement[] } : {}),
  };
}

/**
 * The Ask view's state: a question starts a stream; `delta` events append text, `done` replaces it with the whole
 * answer, `error` (or a stream that ends without `done`) is an error; feedback applies to the finished answer only.
 */
export function askReducer(s: AskState, a: AskAction): AskState {
  switch (a.type) {
    case 'start':
      return { ...initialAsk, phase: 'streaming', question: a.question };
    case 'event': {
      if (s.phase !== 'streaming') return s;
      let data: unknown;
      try {
        data = JSON.parse(a.event.data);
      } catch {
        return { ...s, phase: 'error', error: { code: 'bad_stream', message: `malformed ${a.event.event} event` } };
      }
      if (a.event.event === 'delta') return isRecord(data) && typeof data.text === 'string' ? { ...s, text: s.text + data.text } : s;
      if (a.event.event === 'done') {
        const answer = parseAnswer(data);
        if (!answer) return { ...s, phase: 'error', error: { code: 'bad_stream', message: 'the done event is not an answer' } };
        return { ...s, phase: 'done', text: answer.answer, answer, traceId: answer.trace_id };
      }
      if (a.event.event === 'error') {
        const e = isRecord(data) && isRecord(data.error) ? data.error : {};
        return {
          ...s,
          phase: 'error',
          error: { code: typeof e.code === 'string' ? e.code : 'internal', message: typeof e.message === 'string' ? e.message : 'error' },
          traceId: isRecord(data) && typeof data.trace_id === 'string' ? data.trace_id : s.traceId,
        };
      }
      return s;
    }
    case 'failed':
      return { ...s, phase: 'error', error: { code: a.code, message: a.message } };
    case 'ended':
      return s.phase === 'streaming' ? { ...s, phase: 'error', error: { code: 'bad_stream', message: 'the answer stream ended before the answer was complete' } } : s;
    case 'feedback':
      return s.phase === 'done' ? { ...s, feedback: a.state } : s;
  }
}

export type Segment = { kind: 'text'; text: string } | { kind: 'ref'; ref: number; text: string };

/** Splits answer text into plain text and `[n]` citation markers (`[1][2]` and `[1, 2]` give one marker per number). */
export function segmentAnswer(text: string): Segment[] {
  const out: Segment[] = [];
  const re = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > last) out.push({ kind: 'text', text: text.slice(last, m.index) });
    for (const n of m[1]!.split(',')) out.push({ kind: 'ref', ref: Number(n.trim()), text: `[${n.trim()}]` });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ kind: 'text', text: text.slice(last) });
  return out;
}

/** Words (Latin runs, lowercased) and single CJK characters: the units supporting text is matched on. */
export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]{2,}/gu) ?? []).filter(
    (t) => !STOP.has(t),
  );
}
const STOP = new Set(['the', 'of', 'and', 'to', 'in', 'is', 'are', 'for', 'on', 'with', 'as', 'by', 'at', 'an', 'be', 'it', 'that', 'this', 'or', 'from', 'was', 'were', '的', '了', '是', '在', '和']);

/** The answer's sentences that cite `ref` (the claims the chunk is cited for), without their markers. */
export function claimsFor(answer: string, ref: number): string[] {
  const sentences = answer.split(/(?<=[.!?。！？])\s*/u);
  return sentences.filter((s) => segmentAnswer(s).some((g) => g.kind === 'ref' && g.ref === ref)).map((s) => s.replace(/\[\d+(?:\s*,\s*\d+)*\]/g, '').trim());
}

/**
 * The cited chunk's text split into sentences, the supporting ones marked: those sharing the most distinct terms with
 * the answer's claims that cite it (at least 60 % of the best sentence's overlap, and at least two terms — one for a
 * claim of one or two terms). Nothing is marked when no claim cites the chunk or nothing overlaps.
 */
export function highlightSupport(chunk: string, answer: string, ref: number): { text: string; mark: boolean }[] {
  const claims = claimsFor(answer, ref);
  const claimTerms = new Set(claims.flatMap(terms));
  const sentences = chunk.split(/(?<=[.!?。！？\n])/u).filter((s) => s.length > 0);
  if (claimTerms.size === 0) return sentences.map((text) => ({ text, mark: false }));
  const scores = sentences.map((s) => new Set(terms(s).filter((t) => claimTerms.has(t))).size);
  const best = Math.max(0, ...scores);
  const min = claimTerms.size <= 2 ? 1 : 2;
  return sentences.map((text, i) => ({ text, mark: best >= min && scores[i]! >= Math.max(min, Math.ceil(best * 0.6)) }));
}

export type Route = 'ask' | 'documents' | 'sources' | 'access' | 'overview';

/** The pages a key's scopes can use (the API enforces the scopes; hiding the rest only saves the user a 403). */
export function visibleRoutes(scopes: readonly string[]): Route[] {
  const has = (s: Scope) => scopes.includes(s);
  const out: Route[] = [];
  if (has('ingest') || has('admin')) out.push('overview');
  if (has('query')) out.push('ask');
  if (has('ingest')) out.push('documents');
  if (has('ingest') || has('admin')) out.push('sources');
  if (has('admin')) out.push('access');
  return out;
}

/** The route of a location hash (`#/documents`, `#/documents/<id>`); unknown or hidden routes fall back to the first visible one. */
export function routeOf(hash: string, visible: Route[]): { route: Route | null; param?: string } {
  const [, name, ...rest] = hash.replace(/^#/, '').split('/');
  const r = visible.find((v) => v === name) ?? visible[0] ?? null;
  return r === name && rest.length ? { route: r, param: decodeURIComponent(rest.join('/')) } : { route: r };
}

/** The query stages in pipeline order, for the timing bar (any other stage the API reports follows them). */
export const STAGE_ORDER = ['rewrite', 'embed', 'retrieve_dense', 'dense', 'retrieve_keyword', 'keyword', 'retrieve', 'fuse', 'expand', 'rerank', 'generate'];

/** Stages and their share of the total, for the timing bar; `total` is not a stage. */
export function timingBars(t: Record<string, number>): { stage: string; ms: number; pct: number }[] {
  const stages = Object.entries(t).filter(([k, v]) => k !== 'total' && v >= 0);
  stages.sort(([a], [b]) => (STAGE_ORDER.indexOf(a) + 1 || 99) - (STAGE_ORDER.indexOf(b) + 1 || 99));
  const total = t.total && t.total > 0 ? t.total : stages.reduce((a, [, v]) => a + v, 0);
  return stages.map(([stage, ms]) => ({ stage, ms, pct: total > 0 ? Math.min(100, (ms / total) * 100) : 0 }));
}

/** The document source of an id: `upload`, `confluence`, `notion`, or `api` for ids without a known prefix. */
export function sourceOf(documentId: string): string {
  const p = documentId.split(':')[0];
  return p === 'upload' || p === 'confluence' || p === 'notion' ? p : 'api';
}

/** A trace link from RAG_TRACE_URL_TEMPLATE, or null. */
export function traceUrl(template: string | null | undefined, traceId: string): string | null {
  return template ? template.split('{trace_id}').join(encodeURIComponent(traceId)) : null;
}

/** The document id of an uploaded file: `upload:<name>` with whitespace and `#` (not allowed in ids) replaced by `_`. */
export function uploadIdOf(fileName: string): string {
  const name = fileName.replace(/[\s#]+/g, '_') || 'file';
  return `upload:${name}`.slice(0, 512);
}

import type { Degraded, ScoredChunk } from '@rag/contracts';
import { buildAnswerPrompt, isRefusalAnswer, languageShare, translationForEvidence, parseCitations, REFUSAL_MESSAGE, tenantOfDocumentId, type ExtractiveSource, LexicalMemo, type LexicalMemoOptions, type VerifyMode, type RefusalDecision, type ScriptCalibration, parseStructuredStatements, renderStatements, statementsFromCitedText, STATEMENTS_JSON_SCHEMA, type AnswerStatement } from '@rag/domain';
import { inStage, Logger, setSpanAttributes } from '@rag/platform';
import type { ChatMessage, Grounding, GroundingOutcome, Llm, QueryTranslator } from '@rag/ports';
import type { GateSettings } from './gate-calibration';
import { AnswerVerifier, statementsOf, type VerifierEmbed } from './generator.service.verify';
import { InProcessGrounding } from './in-process-grounding';
import type { GenerateCall, GenerationResult } from './query-path';

/** An answer before verification: `draft` holds its statements when the answerer wrote them (else they are parsed from the text). */
type Drafted = GenerationResult & { draft?: AnswerStatement[] };

export interface GeneratorOptions {
  /** Evidence under this threshold → refusal (the override RAG_REFUSAL_THRESHOLD, or the fallback when `gate` is absent or has no calibration). */
  refusalThreshold: number;
  /**
   * The relevance gate's per-tenant calibration (gate-calibration.ts GateCalibrator): when present, each question is
   * gated with its tenant's calibrated threshold and idf weights. Absent (RAG_REFUSAL_THRESHOLD set, or no index in
   * this process): `refusalThreshold` for every question.
   */
  gate?: { settingsFor(tenant: string, question: string): Promise<GateSettings> };
  llmTimeoutMs: number;
  /** Sources handed to the answerer. */
  maxSources: number;
  /**
   * Memo of the sources' text analysis shared by the gate and the extractive answerer across queries (results are
   * identical with or without; see LexicalMemo). Absent: no memo. Used by the default in-process grounding only (a
   * worker pool keeps its own memo per worker).
   */
  lexicalMemo?: LexicalMemoOptions;
  /** RAG_VERIFY: what to do with statements their cited sources do not support (default mark). */
  verify?: VerifyMode;
  /** The query embedder for the verifier's semantic support, when this process has one (resolved on first use). */
  verifierEmbed?: () => VerifierEmbed | undefined;
  /**
   * Cross-lingual query translation (RAG_TRANSLATION=auto): when the gate refuses a question whose sources are mostly
   * in the other language, the gate judges the question's translation too (see gateTranslated). Absent: off.
   */
  translator?: QueryTranslator | null;
}

/** Share of the sources in the question's other language from which the gate also judges the translation. */
const GATE_TRANSLATION_MIN_SHARE = 0.5;

/** A gate decision with its signals and the script's probe scales, for the debug log (replayable offline). */
function gateLogFields(gate: RefusalDecision, cal: ScriptCalibration | undefined): Record<string, unknown> {
  return {
    refused: gate.refuse,
    evidence: gate.evidence,
    ...(gate.signals ?? {}),
    ...(cal ? { lexical_q50: cal.lexical.q50, lexical_q95: cal.lexical.q95, dense_q50: cal.dense?.q50, dense_q95: cal.dense?.q95, target: cal.target } : {}),
  };
}

/**
 * Answers only from the numbered sources: a relevance gate first (refuse when the evidence is too weak), then the
 * LLM when one is configured (streamed, with a timeout), else — or when the LLM fails — the extractive answerer.
 * The gate and the extractive answerer run on `grounding` (a worker pool in the services, RAG_GENERATOR_WORKERS; in
 * process by default). When grounding runs past its time limit the answer is a refusal (logged), never a hung call.
 */
export class GeneratorService implements GenerateCall {
  private readonly log = new Logger('generator');
  private readonly grounding: Grounding;
  private readonly verifier: AnswerVerifier;
  constructor(
    private readonly llm: Llm | null,
    private readonly opts: GeneratorOptions,
    grounding?: Grounding,
  ) {
    this.grounding = grounding ?? new InProcessGrounding(opts.lexicalMemo);
    // The verifier analyses the same source texts as in-process grounding: one memo for both (its own one when
    // grounding runs on workers, whose memos live in their threads).
    const memo =
      this.grounding instanceof InProcessGrounding
        ? this.grounding.memo
        : opts.lexicalMemo && opts.lexicalMemo.maxEntries > 0
          ? new LexicalMemo(opts.lexicalMemo)
          : undefined;
    this.verifier = new AnswerVerifier(opts.verify ?? 'mark', opts.verifierEmbed, memo);
  }

  /** Hits, misses and size of the text-analysis memo of in-process grounding (null without one, or off-process). */
  memoStats() {
    return this.grounding instanceof InProcessGrounding ? this.grounding.memoStats() : null;
  }

  /** Stops the grounding pool (if any). */
  close(): Promise<void> {
    return this.grounding.close();
  }

  generate(question: string, all: ScoredChunk[], onDelta?: (t: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const attributes = { 'rag.sources': Math.min(all.length, this.opts.maxSources), 'rag.llm.model': this.llm?.id ?? 'extractive' };
    return inStage('generate', attributes, async () => {
      const r = await this.verified(question, all, onDelta, signal);
      setSpanAttributes({ 'rag.refused': r.refused, 'rag.citations': r.cited_refs.length, 'rag.evidence': r.evidence, 'rag.degraded': r.degraded.join(',') });
      return r;
    });
  }

  /**
   * The answer, then its statements verified against the sources they cite (RAG_VERIFY): `mark` keeps them all, each
   * with `supported`; `drop` rewrites the answer from the supported ones; `refuse` (or `drop` with none left) answers
   * with the refusal. A streamed answer has already gone out as deltas: the verification is in the final result
   * (the SSE `done` event), and a dropped or refused answer replaces the streamed text there.
   */
  private async verified(question: string, all: ScoredChunk[], onDelta?: (t: string) => void, signal?: AbortSignal): Promise<GenerationResult> {
    const r = await this.answer(question, all, onDelta, signal);
    if (r.refused) return r;
    const sources = all.slice(0, this.opts.maxSources).map((s, i) => ({ ref: i + 1, text: s.parent_text ?? s.text }));
    const drafted = r.draft ?? statementsFromCitedText(r.answer, sources.length);
    const v = await this.verifier.verify(drafted, sources, signal);
    setSpanAttributes({ 'rag.statements': v.statements.length, 'rag.support_rate': v.supportRate });
    const { draft: _draft, ...result } = r;
    if (v.refuse) return { ...result, answer: REFUSAL_MESSAGE, refused: true, cited_refs: [], statements: [] };
    const statements = statementsOf(v);
    if (v.kept.length === v.statements.length) return { ...result, statements };
    const answer = renderStatements(v.kept);
    return { ...result, answer, cited_refs: parseCitations(answer, sources.length), statements };
  }

  private async answer(question: string, all: ScoredChunk[], onDelta?: (t: string) => void, signal?: AbortSignal): Promise<Drafted> {
    const sources = all.slice(0, this.opts.maxSources);
    const context = (s: ScoredChunk) => s.parent_text ?? s.text;
    const grounded: ExtractiveSource[] = sources.map((s, i) => ({ ref: i + 1, text: context(s), score: s.score, title: s.title }));
    const refusal = (evidence: number): Drafted => {
      onDelta?.(REFUSAL_MESSAGE);
      return { answer: REFUSAL_MESSAGE, refused: true, cited_refs: [], degraded: [], evidence, statements: [] };
    };
    // The gate's settings: the tenant's calibration (the tenant is the one of the retrieved chunks), else the fixed threshold.
    const gateTaskFor = async (q: string) => {
      const settings = this.opts.gate && sources.length ? await this.opts.gate.settingsFor(tenantOfDocumentId(sources[0]!.document_id), q) : undefined;
      return {
        threshold: settings?.threshold ?? this.opts.refusalThreshold,
        ...(settings?.termWeights ? { termWeights: settings.termWeights, unseenWeight: settings.unseenWeight } : {}),
        ...(settings?.calibration ? { calibration: settings.calibration } : {}),
        ...(settings?.denseTop !== undefined ? { denseTop: settings.denseTop } : {}),
      };
    };
    let gateTask = await gateTaskFor(question);
    // Without an LLM the gate and the extractive answer are one task (one round trip to a worker).
    const outcome = await this.grounding.run({ mode: this.llm ? 'gate' : 'answer', question, sources: grounded, ...gateTask });
    if (outcome.timedOut) {
      this.log.warn('grounding (relevance gate / extractive answer) ran past RAG_QUERY_WORKER_TIMEOUT_MS; refusing');
      return refusal(0);
    }
    let first: Exclude<GroundingOutcome, { timedOut: true }> = outcome;
    // What the gate and the extractive answerer read as the question: the question, or its translation when that is
    // what the sources answer (see gateTranslated).
    let evidenceQuestion = question;
    if (first.gate?.refuse && sources.length) {
      const translated = await this.gateTranslated(question, grounded, gateTaskFor);
      if (translated) ({ first, gateTask, evidenceQuestion } = translated);
    }
    const gate = first.gate!;
    // Why a question was answered or refused, for an operator at RAG_LOG_LEVEL=debug (the answer carries `evidence` only).
    this.log.debug('relevance gate', { ...gateLogFields(gate, gateTask.calibration), threshold: gateTask.threshold, calibrated: gateTask.calibration !== undefined });
    if (sources.length === 0 || gate.refuse) return refusal(gate.evidence);
    const degraded: Degraded[] = [];
    if (this.llm) {
      try {
        const messages = buildAnswerPrompt(
          question,
          sources.map((s, i) => ({ ref: i + 1, title: s.title, text: context(s) })),
        );
        const timeout = AbortSignal.timeout(this.opts.llmTimeoutMs);
        const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
        // Not streamed and the adapter can constrain its output: ask for statements as JSON (schema-constrained), else
        // — or when that fails or does not parse after repair — the streamed cited text, split into statements later.
        const structured = !onDelta && this.llm.generateJson ? await this.structured(messages, sources.length, combined) : null;
        if (structured) return { ...structured, degraded, evidence: gate.evidence };
        let answer = '';
        for await (const delta of this.llm.stream(messages, { signal: combined, temperature: 0 })) {
          answer += delta;
          onDelta?.(delta);
        }
        answer = answer.trim();
        const refused = answer.length === 0 || isRefusalAnswer(answer);
        return {
          answer: refused ? REFUSAL_MESSAGE : answer,
          refused,
          cited_refs: refused ? [] : parseCitations(answer, sources.length),
          degraded,
          evidence: gate.evidence,
          statements: [],
        };
      } catch (e) {
        this.log.warn('LLM failed; answering extractively', { error: String(e) });
        degraded.push('llm');
      }
    }
    const ex = this.llm ? await this.grounding.run({ mode: 'extract', question: evidenceQuestion, sources: grounded, ...gateTask }) : first;
    if (ex.timedOut) {
      this.log.warn('extractive answer ran past RAG_QUERY_WORKER_TIMEOUT_MS; refusing');
      return { ...refusal(gate.evidence), degraded };
    }
    const answer = ex.extractive ?? { answer: '', citedRefs: [], sentences: [] };
    onDelta?.(answer.answer);
    // The extractive answer's statements are its sentences, each citing its source.
    const draft = answer.sentences.map((x) => ({ text: x.text, source_ids: [x.ref] }));
    return { answer: answer.answer, refused: false, cited_refs: answer.citedRefs, degraded, evidence: gate.evidence, statements: [], draft };
  }

  /**
   * The gate on the question's translation, for a question the gate refused whose sources are mostly in the other
   * language (a Chinese question answered by English chunks found through its translation, issue 15 item 4): the
   * gate's lexical signals compare the question's words with the sources', so across languages they are ~0 however
   * good the sources are. The translation is read as its best-matching alternative per word (translationForEvidence),
   * gated with the settings of its own script (the index's calibration of that script, idf weights of its words, its
   * dense similarity). Returns the passing outcome, or undefined (the refusal stands). Monolingual sources never get
   * here (the share), so their refusals do not move.
   */
  private async gateTranslated(
    question: string,
    grounded: ExtractiveSource[],
    gateTaskFor: (q: string) => Promise<{ threshold: number; calibration?: ScriptCalibration }>,
  ): Promise<{ first: Exclude<GroundingOutcome, { timedOut: true }>; gateTask: Awaited<ReturnType<typeof gateTaskFor>>; evidenceQuestion: string } | undefined> {
    const translator = this.opts.translator;
    if (!translator) return undefined;
    let translation;
    try {
      translation = await translator.translate(question);
    } catch (e) {
      this.log.warn('query translation failed; the gate judges the question as asked', { error: String(e) });
      return undefined;
    }
    if (!translation) return undefined;
    const texts = grounded.map((g) => g.text);
    if (languageShare(texts, translation.target) < GATE_TRANSLATION_MIN_SHARE) return undefined;
    const q = translationForEvidence(translation, texts);
    if (!q) return undefined;
    const gateTask = await gateTaskFor(q);
    const outcome = await this.grounding.run({ mode: this.llm ? 'gate' : 'answer', question: q, sources: grounded, ...gateTask });
    if (!outcome.timedOut && outcome.gate) this.log.debug('relevance gate on the translation', gateLogFields(outcome.gate, gateTask.calibration));
    if (outcome.timedOut || !outcome.gate || outcome.gate.refuse) return undefined;
    setSpanAttributes({ 'rag.gate.translated': true });
    return { first: outcome, gateTask, evidenceQuestion: q };
  }

  /** The LLM's answer as schema-constrained JSON statements (repaired when needed); null when it fails or does not parse. */
  private async structured(messages: ChatMessage[], maxRef: number, signal: AbortSignal): Promise<Omit<Drafted, 'degraded' | 'evidence'> | null> {
    const ask: ChatMessage[] = [
      ...messages,
      {
        role: 'user',
        content:
          'Reply as JSON: {"statements": [{"text": "<one claim, in the language of the question>", "source_ids": [<the numbers of the sources that support it>]}]}. ' +
          `If the sources do not contain the answer, reply {"statements": [{"text": "${REFUSAL_MESSAGE}", "source_ids": []}]}.`,
      },
    ];
    try {
      const r = await this.llm!.generateJson!(ask, STATEMENTS_JSON_SCHEMA, { signal, temperature: 0 });
      const statements = parseStructuredStatements(r.value, maxRef) ?? parseStructuredStatements(r.text, maxRef);
      if (!statements) {
        this.log.warn('LLM structured answer did not parse; streaming the cited text instead');
        return null;
      }
      const answer = renderStatements(statements);
      if (statements.length === 1 && isRefusalAnswer(statements[0]!.text)) return { answer: REFUSAL_MESSAGE, refused: true, cited_refs: [], statements: [] };
      return { answer, refused: false, cited_refs: parseCitations(answer, maxRef), statements: [], draft: statements };
    } catch (e) {
      if (signal.aborted) throw e;
      // A JSON answer cut at the token limit (or not parsing) still holds the statements written so far: keep those
      // rather than spending a second call on the streamed text.
      const text = (e as { details?: { text?: unknown } }).details?.text;
      const salvaged = typeof text === 'string' ? parseStructuredStatements(text, maxRef) : null;
      if (salvaged) {
        this.log.warn('LLM structured answer incomplete; keeping the statements it wrote', { error: String(e) });
        const answer = renderStatements(salvaged);
        return { answer, refused: false, cited_refs: parseCitations(answer, maxRef), statements: [], draft: salvaged };
      }
      this.log.warn('LLM structured answer failed; streaming the cited text instead', { error: String(e) });
      return null;
    }
  }
}

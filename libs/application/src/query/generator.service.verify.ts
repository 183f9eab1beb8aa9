import type { RagV1 } from '@rag/contracts';
import { SUPPORT_THRESHOLD, verifyStatements, type AnswerStatement, type LexicalMemo, type Verification, type VerifyMode, type VerifySource } from '@rag/domain';
import { Logger } from '@rag/platform';

/** Embeds texts for the verifier (the query path's embedder: one vector per text, L2-normalised). */
export type VerifierEmbed = (text: string, signal?: AbortSignal) => Promise<Float32Array>;

/**
 * The post-hoc citation check of GeneratorService (issue 15 item 3): scores the answer's statements against the
 * sources they cite (domain verify.ts) and applies RAG_VERIFY. Lexical support first; only statements it leaves
 * under the threshold are embedded (with the sources they cite) when an embedder is at hand, so the extractive
 * answer — the sources' own sentences, lexical support 1 — costs no embedding. A failed embedding leaves the
 * lexical support (logged), never fails the answer.
 * Not built: a verifier model (an NLI cross-encoder or the LLM as judge); none is configured in this project.
 */
export class AnswerVerifier {
  private readonly log = new Logger('generator');
  private readonly features: ((text: string) => ReturnType<LexicalMemo['context']>) | undefined;
  /** `memo`: the text-analysis memo shared with in-process grounding (the same parent texts), or one of its own. */
  constructor(
    readonly mode: VerifyMode,
    private readonly embed?: () => VerifierEmbed | undefined,
    memo?: LexicalMemo,
  ) {
    this.features = memo ? (text) => memo.context(text) : undefined;
  }

  async verify(statements: readonly AnswerStatement[], sources: readonly VerifySource[], signal?: AbortSignal): Promise<Verification> {
    const features = this.features;
    const lexical = verifyStatements(statements, sources, { mode: this.mode, ...(features ? { features } : {}) });
    const weak = lexical.statements.map((s, i) => ({ s, i })).filter(({ s }) => !s.supported && s.source_ids.length > 0);
    const embed = weak.length > 0 ? this.embed?.() : undefined;
    if (!embed) return lexical;
    try {
      const byRef = new Map(sources.map((s) => [s.ref, s.text]));
      const sourceVectors = new Map<number, Float32Array>();
      const similarity: Map<number, number>[] = [];
      for (const { s, i } of weak) {
        const v = await embed(s.text, signal);
        const sims = new Map<number, number>();
        for (const r of s.source_ids) {
          const text = byRef.get(r);
          if (text === undefined) continue;
          let sv = sourceVectors.get(r);
          if (!sv) sourceVectors.set(r, (sv = await embed(text, signal)));
          sims.set(r, dot(v, sv));
        }
        similarity[i] = sims;
      }
      return verifyStatements(statements, sources, { mode: this.mode, similarity, ...(features ? { features } : {}) });
    } catch (e) {
      this.log.warn('verifier: embedding failed; lexical support only', { error: String(e) });
      return lexical;
    }
  }
}

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) s += a[i]! * b[i]!;
  return s;
}

/** The wire form of verified statements (rag.proto Statement). */
export function statementsOf(v: Verification): RagV1.Statement[] {
  return v.kept.map((s) => ({ text: s.text, source_ids: s.source_ids, support: s.support, supported: s.supported }));
}

export { SUPPORT_THRESHOLD };

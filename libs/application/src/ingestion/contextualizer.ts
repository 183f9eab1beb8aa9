import type { Chunk } from '@rag/contracts';
import { cleanContext, contextDocumentText, contextPrompt } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { Llm } from '@rag/ports';

export interface ContextualizerOptions {
  /** RAG_CONTEXTUAL_DOC_TOKENS: the document text in the prompt is cut to this many tokens. */
  documentTokens: number;
  /** RAG_CONTEXTUAL_MAX_TOKENS: completion tokens of one context. */
  maxTokens: number;
  /**
   * Consecutive failed calls after which the rest of the document's chunks are left without context (an LLM that
   * is down would otherwise cost one timeout per chunk). Default 3.
   */
  maxConsecutiveFailures?: number;
}

export interface ContextualizeResult {
  chunks: Chunk[];
  /** Children that got a context. */
  written: number;
  /** Children whose call failed, or were skipped after too many failures in a row. */
  failed: number;
  /** Children whose output was unusable (empty, an echo of the chunk). */
  empty: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * Contextual retrieval at ingestion (issue 16 item 5): one LLM call per child chunk, in order and one at a time, with
 * the document as the shared prompt prefix (see libs/domain chunking/context-prompt.ts), so a local model reuses the
 * prefix's KV cache and an OpenAI-compatible server its prompt cache. Parents are not contextualised: they are never
 * searched or embedded. A failed call leaves its chunk without context; it never fails the document.
 */
export class Contextualizer {
  private readonly log = new Logger('contextualizer');
  constructor(
    private readonly llm: Llm,
    private readonly options: ContextualizerOptions,
  ) {}

  get modelId(): string {
    return this.llm.id;
  }

  async contextualize(doc: { document_id: string; title: string; chunks: readonly Chunk[] }, signal?: AbortSignal): Promise<ContextualizeResult> {
    const documentText = contextDocumentText(doc.chunks, this.options.documentTokens);
    const maxFailures = this.options.maxConsecutiveFailures ?? 3;
    const out: Chunk[] = [];
    const r = { written: 0, failed: 0, empty: 0, prompt_tokens: 0, completion_tokens: 0 };
    let failuresInRow = 0;
    let lastError = '';
    for (const chunk of doc.chunks) {
      // A re-indexed chunk is asked again: its old context (if any) is dropped first, so the result is this run's.
      const { context: _old, ...bare } = chunk;
      if (chunk.kind !== 'child') {
        out.push(bare);
        continue;
      }
      if (failuresInRow >= maxFailures || signal?.aborted) {
        r.failed++;
        out.push(bare);
        continue;
      }
      try {
        const res = await this.llm.complete(contextPrompt(doc.title, documentText, chunk.text), { maxTokens: this.options.maxTokens, temperature: 0, signal });
        r.prompt_tokens += res.usage?.prompt_tokens ?? 0;
        r.completion_tokens += res.usage?.completion_tokens ?? 0;
        failuresInRow = 0;
        const context = cleanContext(res.text, chunk.text);
        if (context) {
          r.written++;
          out.push({ ...bare, context });
        } else {
          r.empty++;
          out.push(bare);
        }
      } catch (e) {
        failuresInRow++;
        r.failed++;
        lastError = e instanceof Error ? e.message : String(e);
        out.push(bare);
      }
    }
    if (r.failed > 0) {
      this.log.warn('contextual chunks: some chunks were left without context', { document_id: doc.document_id, failed: r.failed, error: lastError.slice(0, 300) });
    }
    return { chunks: out, ...r };
  }
}

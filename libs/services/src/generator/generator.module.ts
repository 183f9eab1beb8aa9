import { Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { createWorkerGrounding } from '@rag/adapters';
import { GeneratorService, InProcessGrounding } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { GROUNDING, LLM, type Grounding, type Llm } from '@rag/ports';
import { CONFIG, GENERATE_CALL } from '../core/tokens';

/** generator: relevance gate, then the LLM (streamed) or the extractive answerer, citing [n]. */
@Module({
  providers: [
    {
      // the gate's and the extractive answerer's text work: a worker pool (RAG_GENERATOR_WORKERS > 0) or in process
      provide: GROUNDING,
      useFactory: async (c: AppConfig): Promise<Grounding> => {
        const memo = { maxEntries: c.RAG_GENERATOR_MEMO_ENTRIES, maxChars: c.RAG_GENERATOR_MEMO_CHARS };
        if (c.RAG_GENERATOR_WORKERS === 0) return new InProcessGrounding(memo);
        return createWorkerGrounding({ workers: c.RAG_GENERATOR_WORKERS, timeoutMs: c.RAG_QUERY_WORKER_TIMEOUT_MS, memo });
      },
      inject: [CONFIG],
    },
    {
      provide: GENERATE_CALL,
      useFactory: (llm: Llm | null, c: AppConfig, grounding: Grounding) =>
        new GeneratorService(
          llm,
          {
            refusalThreshold: c.RAG_REFUSAL_THRESHOLD,
            llmTimeoutMs: c.RAG_LLM_TIMEOUT_MS,
            maxSources: c.RAG_TOP_K,
            lexicalMemo: { maxEntries: c.RAG_GENERATOR_MEMO_ENTRIES, maxChars: c.RAG_GENERATOR_MEMO_CHARS },
          },
          grounding,
        ),
      inject: [LLM, CONFIG, GROUNDING],
    },
  ],
  exports: [GENERATE_CALL],
})
export class GeneratorModule implements OnApplicationShutdown {
  constructor(@Inject(GROUNDING) private readonly grounding: Grounding) {}

  /** Stops the worker threads (after the HTTP/gRPC servers stopped taking queries). */
  async onApplicationShutdown(): Promise<void> {
    await this.grounding.close();
  }
}

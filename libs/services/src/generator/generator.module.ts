import { Module } from '@nestjs/common';
import { GeneratorService } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { LLM, type Llm } from '@rag/ports';
import { CONFIG, GENERATE_CALL } from '../core/tokens';

/** generator: relevance gate, then the LLM (streamed) or the extractive answerer, citing [n]. */
@Module({
  providers: [
    {
      provide: GENERATE_CALL,
      useFactory: (llm: Llm | null, c: AppConfig) =>
        new GeneratorService(llm, {
          refusalThreshold: c.RAG_REFUSAL_THRESHOLD,
          llmTimeoutMs: c.RAG_LLM_TIMEOUT_MS,
          maxSources: c.RAG_TOP_K,
          lexicalMemo: { maxEntries: c.RAG_GENERATOR_MEMO_ENTRIES, maxChars: c.RAG_GENERATOR_MEMO_CHARS },
        }),
      inject: [LLM, CONFIG],
    },
  ],
  exports: [GENERATE_CALL],
})
export class GeneratorModule {}

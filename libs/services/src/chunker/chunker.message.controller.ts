import { Controller, Inject, Optional } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { ChunkerStage, Contextualizer } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, LLM, type BatchOutcome, type Bus, type BusMessage, type Llm } from '@rag/ports';
import { CONFIG } from '../core/tokens';

/**
 * The contextualizer for RAG_CONTEXTUAL_CHUNKS=on (the configuration refuses `on` without RAG_LLM, so an LLM is
 * bound then: embedded, the process's one LLM; distributed, the chunker process loads it, see apps/chunker).
 */
export function contextualizerFor(config: AppConfig, llm: Llm | null | undefined): Contextualizer | null {
  if (config.RAG_CONTEXTUAL_CHUNKS !== 'on') return null;
  if (!llm) throw new Error('RAG_CONTEXTUAL_CHUNKS=on but no LLM is bound in this process (RAG_LLM)');
  return new Contextualizer(llm, { documentTokens: config.RAG_CONTEXTUAL_DOC_TOKENS, maxTokens: config.RAG_CONTEXTUAL_MAX_TOKENS });
}

/** chunker's bus handler: rag.documents.v1 (consumer group `chunker`) → ChunkerStage, a batch of messages per call (bulk ingestion). */
@Controller()
export class ChunkerMessageController {
  private readonly stage: ChunkerStage;
  constructor(@Inject(BUS) bus: Bus, @Inject(CONFIG) config: AppConfig, @Optional() @Inject(LLM) llm?: Llm | null) {
    this.stage = new ChunkerStage(
      bus,
      { chunkTokens: config.RAG_CHUNK_TOKENS, overlapTokens: config.RAG_CHUNK_OVERLAP_TOKENS, parentTokens: config.RAG_PARENT_CHUNK_TOKENS },
      config.RAG_MAX_CHUNKS_PER_DOCUMENT,
      contextualizerFor(config, llm),
    );
  }

  /** A batch of documents per call (distinct ids): their chunk events go out in one publish. */
  @EventPattern(Topic.Documents, BUS_TRANSPORT, { group: 'chunker', batch: true })
  handle(@Payload() msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return this.stage.handleBatch(msgs);
  }
}

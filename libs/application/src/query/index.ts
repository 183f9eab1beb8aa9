export * from './query-path';
export * from './retriever.service';
export * from './reranker.service';
export * from './generator.service';
export * from './embedding.service';
export * from './query.orchestrator';
export * from './query-rewriter';
export * from './in-process-grounding';

export * from './embedder.port';
export * from './vector-store.port';
export * from './keyword-index.port';
export * from './registry.port';
export * from './reranker.port';
export * from './llm.port';
export * from './bus.port';
export * from './source-connector.port';

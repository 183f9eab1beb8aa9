// The adapters' public face. Adapters that need only Node, better-sqlite3 or hnswlib-node (small, native) are
// re-exported as values. Adapters over a heavy SDK (kafkajs; the Milvus, OpenSearch and Elasticsearch clients;
// pdf.js + mammoth) are re-exported as TYPES only: importing '@rag/adapters' must not load SDKs a process does not
// use. Processes get those adapters from the factory (createBus, createVectorStore, createKeywordIndex,
// createDocumentParser), which imports them lazily in the branch the configuration picks; tests that drive one
// engine directly import its folder (e.g. '../../libs/adapters/src/milvus'). barrel.spec.ts holds this in place.
export * from './embedded-hnsw';
export * from './embedded-bm25';
export * from './sqlite-registry';
export * from './hashing-embedder';
export * from './onnx-embedder';
export * from './http-embedder';
export * from './embedding-cache';
export * from './cross-encoder';
export * from './http-reranker';
export * from './openai-llm';
// node-llama-cpp (ESM) is imported only inside LocalLlm.create, so this re-export loads nothing heavy.
export * from './local-llm';
export * from './log-bus';
export * from './bus-delivery';
export * from './factory';
export * from './keyword-search-core';
export * from './source-http';
export * from './confluence';
export * from './notion';
export * from './sqlite-api-keys';
export * from './script-routed-embedder';
export * from './cross-lingual-embedder';
export * from './dictionary-translator';
export * from './sqlite';
export * from './gate-calibration';
export type * from './milvus';
export type * from './opensearch';
export type * from './elasticsearch';
export type * from './kafka-bus';
export type * from './document-parsers';
export type * from './postgres';
// piscina stays unloaded until a process asks for a query worker pool (RAG_QUERY_WORKERS / RAG_GENERATOR_WORKERS > 0)
export { createWorkerGrounding, withKeywordSearchWorkers } from './query-workers/create';
export type * from './query-workers';
export { withKeywordWriteWorker } from './keyword-writer/create';
export type * from './keyword-writer';

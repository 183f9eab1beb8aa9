export { EmbeddedHnswVectorStore, modelFolderName } from './embedded-hnsw.adapter';
export type { EmbeddedHnswVectorStoreOptions } from './embedded-hnsw.adapter';
